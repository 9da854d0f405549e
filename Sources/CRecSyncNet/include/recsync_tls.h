#ifndef RECSYNC_TLS_H
#define RECSYNC_TLS_H

#include <stddef.h>
#include <stdint.h>

/* The check of a server certificate for an IP address, which libgit2 1.5 cannot make: its
   TLS backend (mbedTLS 2.28) matches the host only against the certificate's DNS names and
   common name, never against its IP addresses (subjectAltName iPAddress).

   recsync_tls_verify_ip verifies the DER certificate `der` with mbedTLS: signed by a
   certificate authority in `ca_file` and/or `ca_dir` (either may be NULL, not both), within
   its validity period, usable by a TLS server (key usage, extended key usage), by mbedTLS's
   default security profile, as libgit2 verifies it, but with no name check; and then that
   one of its subjectAltName IP addresses is `ip` (4 or 16 bytes, network order). Only the
   server's own certificate is at hand (libgit2 passes no chain), so it must be signed by a
   trusted authority directly.

   Returns RECSYNC_TLS_TRUSTED, or why not, with mbedTLS's own words in `detail` (at most
   `detail_size` bytes, NUL-terminated). */
typedef enum {
    RECSYNC_TLS_TRUSTED = 0,
    /* The certificate authorities could not be read. */
    RECSYNC_TLS_NO_AUTHORITIES = 1,
    /* The certificate could not be parsed. */
    RECSYNC_TLS_UNREADABLE = 2,
    /* Not signed by a trusted authority, expired, not yet valid, or not for a TLS server. */
    RECSYNC_TLS_NOT_TRUSTED = 3,
    /* Trusted, but not issued for this IP address. */
    RECSYNC_TLS_OTHER_ADDRESS = 4
} recsync_tls_outcome;

recsync_tls_outcome recsync_tls_verify_ip(
    const unsigned char *der, size_t der_len, const char *ca_file, const char *ca_dir, const unsigned char *ip, size_t ip_len,
    char *detail, size_t detail_size);

#endif
