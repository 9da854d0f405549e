#include "recsync_tls.h"

#include <mbedtls/asn1.h>
#include <mbedtls/error.h>
#include <mbedtls/oid.h>
#include <mbedtls/x509.h>
#include <mbedtls/x509_crt.h>
#include <stdio.h>
#include <string.h>

/* The subjectAltName iPAddress tag: [7], context-specific, primitive. */
#define SAN_IP_ADDRESS (MBEDTLS_ASN1_CONTEXT_SPECIFIC | 7)

static void say(char *detail, size_t size, const char *text) {
    if (detail && size > 0) snprintf(detail, size, "%s", text);
}

static void say_error(char *detail, size_t size, int error) {
    char text[256];
    mbedtls_strerror(error, text, sizeof text);
    say(detail, size, text);
}

recsync_tls_outcome recsync_tls_verify_ip(
    const unsigned char *der, size_t der_len, const char *ca_file, const char *ca_dir, const unsigned char *ip, size_t ip_len,
    char *detail, size_t detail_size) {
    say(detail, detail_size, "");
    if ((!ca_file && !ca_dir) || (ip_len != 4 && ip_len != 16)) {
        say(detail, detail_size, "no certificate authorities or no address given");
        return RECSYNC_TLS_NO_AUTHORITIES;
    }
    mbedtls_x509_crt authorities, certificate;
    mbedtls_x509_crt_init(&authorities);
    mbedtls_x509_crt_init(&certificate);
    recsync_tls_outcome outcome = RECSYNC_TLS_NOT_TRUSTED;
    int result = 0;
    /* As libgit2 loads them: a file, then a directory (whose unreadable files are skipped). */
    if (ca_file) result = mbedtls_x509_crt_parse_file(&authorities, ca_file);
    if (result >= 0 && ca_dir) result = mbedtls_x509_crt_parse_path(&authorities, ca_dir);
    if (result < 0 || authorities.raw.len == 0) {
        if (result < 0) say_error(detail, detail_size, result);
        else say(detail, detail_size, "no certificate could be read");
        outcome = RECSYNC_TLS_NO_AUTHORITIES;
        goto done;
    }
    result = mbedtls_x509_crt_parse_der(&certificate, der, der_len);
    if (result != 0) {
        say_error(detail, detail_size, result);
        outcome = RECSYNC_TLS_UNREADABLE;
        goto done;
    }
    uint32_t flags = 0;
    /* No name (NULL): the address is matched below, against the IP addresses only. */
    result = mbedtls_x509_crt_verify(&certificate, &authorities, NULL, NULL, &flags, NULL, NULL);
    if (result != 0 || flags != 0) {
        char text[512];
        int length = mbedtls_x509_crt_verify_info(text, sizeof text, "", flags);
        if (length >= 1 && text[length - 1] == '\n') text[length - 1] = '\0';
        if (length > 0) say(detail, detail_size, text);
        else say_error(detail, detail_size, result);
        goto done;
    }
    /* What mbedTLS's TLS client asks of a server's certificate with the ciphersuites libgit2
       allows (all ECDHE or DHE, signed by the server's key). */
    if (mbedtls_x509_crt_check_key_usage(&certificate, MBEDTLS_X509_KU_DIGITAL_SIGNATURE) != 0 ||
        mbedtls_x509_crt_check_extended_key_usage(&certificate, MBEDTLS_OID_SERVER_AUTH, MBEDTLS_OID_SIZE(MBEDTLS_OID_SERVER_AUTH)) != 0) {
        say(detail, detail_size, "the certificate is not for a TLS server (key usage)");
        goto done;
    }
    outcome = RECSYNC_TLS_OTHER_ADDRESS;
    say(detail, detail_size, "the certificate names no such IP address");
    if (certificate.ext_types & MBEDTLS_X509_EXT_SUBJECT_ALT_NAME) {
        for (const mbedtls_x509_sequence *name = &certificate.subject_alt_names; name != NULL; name = name->next) {
            if (name->buf.tag == SAN_IP_ADDRESS && name->buf.len == ip_len && memcmp(name->buf.p, ip, ip_len) == 0) {
                outcome = RECSYNC_TLS_TRUSTED;
                say(detail, detail_size, "");
                break;
            }
        }
    }
done:
    mbedtls_x509_crt_free(&certificate);
    mbedtls_x509_crt_free(&authorities);
    return outcome;
}
