/*
 * proxy/tls.c: TLS toward the box, for clients that insist on https (Codex's ChatGPT backend
 * URL). Each proxy makes a CA of its own when it starts (an EC P-256 key that never leaves
 * this process's memory, valid 30 days, name-constrained to 127.0.0.1 and localhost) and a
 * server certificate for those names signed by it; the box gets the CA certificate only and
 * the client trusts it alone (CODEX_CA_CERTIFICATE), not the system. A TLS connection is
 * decrypted here and its plain bytes go through a socket pair to the usual request loop
 * (proxy_conn_serve), so the policy, the swap and the audit are the same as over HTTP.
 * Library: OpenSSL (the one libcurl uses).
 */
#include "proxy/proxy_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#define TLS_VALID_DAYS	 30
#define TLS_HANDSHAKE_MS 15000

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	int ok;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	ok = ext && X509_add_ext(cert, ext, -1);
	X509_EXTENSION_free(ext);
	return ok ? 0 : -1;
}

/* A certificate for key, named cn, signed by issuer_key (issuer NULL: self-signed). */
static X509 *make_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *issuer_key,
		       const char *const exts[][2], size_t n_exts)
{
	X509 *x = X509_new();
	X509_NAME *name = x ? X509_get_subject_name(x) : NULL;
	BIGNUM *serial = BN_new();
	int ok = x && name && serial && BN_rand(serial, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) &&
		 BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(x)) &&
		 X509_set_version(x, X509_VERSION_3) &&
		 X509_gmtime_adj(X509_getm_notBefore(x), -3600) &&
		 X509_gmtime_adj(X509_getm_notAfter(x), 86400L * TLS_VALID_DAYS) &&
		 X509_set_pubkey(x, key) &&
		 X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1,
					    -1, 0) &&
		 X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);

	for (size_t i = 0; ok && i < n_exts; i++)
		ok = add_ext(x, issuer ? issuer : x, OBJ_txt2nid(exts[i][0]), exts[i][1]) == 0;
	ok = ok && X509_sign(x, issuer_key, EVP_sha256());
	BN_free(serial);
	if (!ok) {
		X509_free(x);
		return NULL;
	}
	return x;
}

int proxy_tls_init(struct proxy *p)
{
	static const char *const ca_exts[][2] = {
	    {"basicConstraints", "critical,CA:TRUE,pathlen:0"},
	    {"keyUsage", "critical,keyCertSign,cRLSign"},
	    {"subjectKeyIdentifier", "hash"},
	    {"nameConstraints",
	     "critical,permitted;IP:127.0.0.1/255.255.255.255,permitted;DNS:localhost"},
	};
	static const char *const leaf_exts[][2] = {
	    {"basicConstraints", "critical,CA:FALSE"},
	    {"keyUsage", "critical,digitalSignature"},
	    {"extendedKeyUsage", "serverAuth"},
	    {"subjectAltName", "IP:127.0.0.1,DNS:localhost"},
	    {"authorityKeyIdentifier", "keyid:always"},
	};
	EVP_PKEY *ca_key = EVP_EC_gen("P-256"), *key = EVP_EC_gen("P-256");
	X509 *ca = ca_key ? make_cert(ca_key, "arborinth proxy CA (this session only)", NULL,
				      ca_key, ca_exts, ARB_ARRAY_LEN(ca_exts))
			  : NULL;
	X509 *leaf =
	    ca && key ? make_cert(key, "localhost", ca, ca_key, leaf_exts, ARB_ARRAY_LEN(leaf_exts))
		      : NULL;
	BIO *bio = BIO_new(BIO_s_mem());
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	char *pem = NULL;
	long n;
	int rc = -EIO;

	if (!leaf || !bio || !ctx || !PEM_write_bio_X509(bio, ca) ||
	    !SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) ||
	    SSL_CTX_use_certificate(ctx, leaf) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1) {
		rc = util_err(-EIO, "cannot make the proxy's TLS certificate: %s",
			      ERR_reason_error_string(ERR_get_error()) ?: "OpenSSL error");
		goto out;
	}
	n = BIO_get_mem_data(bio, &pem);
	p->tls_ca_pem = strndup(pem, (size_t)n);
	if (!p->tls_ca_pem) {
		rc = util_err(-ENOMEM, "out of memory");
		goto out;
	}
	SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	p->tls_ctx = ctx;
	ctx = NULL;
	rc = 0;
out:
	SSL_CTX_free(ctx);
	BIO_free(bio);
	X509_free(leaf);
	X509_free(ca);
	EVP_PKEY_free(key); /* the context keeps its own reference */
	EVP_PKEY_free(ca_key);
	ERR_clear_error();
	return rc;
}

void proxy_tls_free(struct proxy *p)
{
	SSL_CTX_free(p->tls_ctx);
	p->tls_ctx = NULL;
	free(p->tls_ca_pem);
	p->tls_ca_pem = NULL;
}

const char *proxy_tls_ca(const struct proxy *p)
{
	return p->tls_ca_pem;
}

/* Waits until fd can do what SSL asked for (err: SSL_ERROR_WANT_*). 0, or -1 on timeout. */
static int ssl_wait(int fd, int err, int ms)
{
	struct pollfd pfd = {.fd = fd, .events = err == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN};
	int n;

	do {
		n = poll(&pfd, 1, ms);
	} while (n < 0 && errno == EINTR);
	return n > 0 ? 0 : -1;
}

/* Writes all of buf through ssl (fd non-blocking). 0, or -1 when the box went away. */
static int ssl_write_all(SSL *ssl, int fd, const char *buf, size_t len)
{
	while (len > 0) {
		int n = SSL_write(ssl, buf, (int)len), err;

		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		err = SSL_get_error(ssl, n);
		if ((err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) ||
		    ssl_wait(fd, err, PROXY_SEND_MS) < 0)
			return -1;
	}
	return 0;
}

struct inner {
	struct proxy *p;
	int fd;
};

static void *inner_main(void *arg)
{
	struct inner *in = arg;

	proxy_conn_serve(in->p, in->fd);
	return NULL;
}

/*
 * Copies between the box's TLS connection and the request loop's end of the pair until
 * either side ends; the caller then closes the pair, which aborts what the loop was doing
 * (as a box that hangs up on the plain socket does).
 */
static void pump(SSL *ssl, int fd, int plain)
{
	char buf[PROXY_IO_BUF];

	for (;;) {
		struct pollfd pfd[2] = {{.fd = fd, .events = POLLIN},
					{.fd = plain, .events = POLLIN}};
		int n = SSL_pending(ssl) > 0 ? 1 : poll(pfd, 2, PROXY_IDLE_MS);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		if (SSL_pending(ssl) > 0 || pfd[0].revents) {
			int r = SSL_read(ssl, buf, sizeof(buf)), err = SSL_get_error(ssl, r);

			if (r > 0 && proxy_send_all(plain, buf, (size_t)r) < 0)
				return;
			if (r <= 0 && err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE)
				return;
		}
		if (pfd[1].revents) {
			ssize_t r = recv(plain, buf, sizeof(buf), 0);

			if (r <= 0 || ssl_write_all(ssl, fd, buf, (size_t)r) < 0)
				return;
		}
	}
}

void proxy_tls_serve(struct proxy *p, int fd)
{
	struct inner in = {.p = p, .fd = -1};
	SSL *ssl = SSL_new(p->tls_ctx);
	int sv[2] = {-1, -1}, rc;
	pthread_t t;
	bool started = false;

	if (!ssl || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0 ||
	    SSL_set_fd(ssl, fd) != 1)
		goto out;
	while ((rc = SSL_accept(ssl)) != 1) {
		int err = SSL_get_error(ssl, rc);

		if ((err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) ||
		    atomic_load(&p->stopping) || ssl_wait(fd, err, TLS_HANDSHAKE_MS) < 0)
			goto out;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		goto out;
	in.fd = sv[1];
	if (pthread_create(&t, NULL, inner_main, &in) != 0)
		goto out;
	started = true;
	pump(ssl, fd, sv[0]);
	SSL_shutdown(ssl);
out:
	/* The request loop ends when its peer is gone; then its end of the pair is closed. */
	if (sv[0] >= 0)
		shutdown(sv[0], SHUT_RDWR);
	if (started)
		pthread_join(t, NULL);
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	SSL_free(ssl);
	ERR_clear_error();
}
