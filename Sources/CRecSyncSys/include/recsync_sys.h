#ifndef RECSYNC_SYS_H
#define RECSYNC_SYS_H

/* Linux calls Swift's Glibc module does not expose. */

/* syncfs(2): flush every dirty page of the file system holding fd; -1 with errno where unsupported. */
int recsync_syncfs(int fd);

#endif
