/*
 * compat/git_nocerts.c: libgit2 without the system's CA bundle.
 *
 * Debian's libgit2 is built with mbedTLS and, in git_libgit2_init(), parses the whole CA
 * bundle (/etc/ssl/certs/ca-certificates.crt, ~140 certificates of base64) into an mbedTLS
 * chain: about 5 ms of CPU in every process, which was a tenth of a checkpoint and of every
 * command that opens a project. No arborinth process talks TLS through libgit2 (fetch and push
 * run the git CLI; the proxy uses libcurl), and libgit2 offers no option to skip the load.
 * Defined in the executable, this function wins over libmbedx509's for libgit2 (the dynamic
 * linker looks in the executable first; the linker exports it because libgit2.so, linked
 * here, names it). Failing closed: a TLS connection made through libgit2 anyway would have no
 * trusted certificate and be refused, never accepted unchecked. libcurl (GnuTLS) is untouched.
 */

/* MBEDTLS_ERR_X509_FILE_IO_ERROR in mbedtls/x509.h: libgit2 then carries on without a chain. */
#define NOCERTS_FILE_IO_ERROR (-0x2900)

struct mbedtls_x509_crt;

/* Default visibility: libgit2's call must find it in the executable's dynamic symbols. */
__attribute__((visibility("default"))) int
mbedtls_x509_crt_parse_file(struct mbedtls_x509_crt *chain, const char *path);
int mbedtls_x509_crt_parse_file(struct mbedtls_x509_crt *chain, const char *path)
{
	(void)chain;
	(void)path;
	return NOCERTS_FILE_IO_ERROR;
}
