/*
 * compat/proxy_lazy_libs.c: libcurl, OpenSSL (libssl, libcrypto) and nghttp2, opened by
 * arborinth_proxy on the first call that needs them, never linked.
 *
 * One arborinth_proxy starts with every box that has a backend. Linked, libcurl brings about
 * thirty shared libraries (OpenSSL, GnuTLS through librtmp, Kerberos, LDAP, libssh2, ...), all
 * bound at start (Debian builds them with -z now): about 4.5 ms of CPU and most of the
 * program's start (docs/notes/proxy-process.md). A box with a key backend needs none of them
 * before it starts: the proxy reads the key, listens, answers the launcher and opens them when
 * the box's first request goes upstream. A backend that needs them at start still opens them
 * then (TLS toward the box makes its certificate, a Vertex or login backend mints or checks a
 * token before the box starts), so what is reported before the box starts is unchanged.
 *
 * Each function the proxy calls is defined here with its header's prototype (the compiler
 * checks them) and forwards to the library's, looked up on the first call; the list is made
 * by compat/gen-lazy-proxy.py, the variadic ones are written by hand. A function that frees
 * an object does nothing while its library is not open (no object of it exists). A library
 * that cannot be opened ends the process as the dynamic linker would have at start (127, the
 * reason on stderr). The tests and the benchmarks link the libraries. The forwarders are not
 * exported (the build's hidden visibility): exported, they would catch the libraries' calls
 * to each other (libcurl's to OpenSSL's).
 */
/* curl.h's checking macros would hide the definitions of the functions of the same name. */
#define CURL_DISABLE_TYPECHECK
/* curl 8 (Debian 13) declares curl_url_get(const CURLU *, ...), 7.88 (Debian 12) without the
 * const: the header's declaration is renamed here, and the forwarder below takes a const
 * CURLU *, the same call for both (compat/gen-lazy-proxy.py: CONST_FIRST). */
#define curl_url_get arb_curl_url_get_as_declared
#include <curl/curl.h>
#undef curl_url_get
CURLUcode curl_url_get(const CURLU *handle, CURLUPart what, char **part, unsigned int flags);
#include <dlfcn.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ARB_*_SONAME: from the libraries the build found (cli/CMakeLists.txt). */
enum lazy_lib { LIB_CURL, LIB_SSL, LIB_CRYPTO, LIB_NGHTTP2, N_LIBS };

static const char *const sonames[N_LIBS] = {ARB_CURL_SONAME, ARB_SSL_SONAME, ARB_CRYPTO_SONAME,
					    ARB_NGHTTP2_SONAME};
static void *handles[N_LIBS];
static pthread_once_t onces[N_LIBS] = {PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT,
				       PTHREAD_ONCE_INIT};

static void open_lib(enum lazy_lib l)
{
	void *h = dlopen(sonames[l], RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fprintf(stderr, "arborinth_proxy: error while loading shared libraries: %s\n",
			dlerror());
		_exit(127);
	}
	__atomic_store_n(&handles[l], h, __ATOMIC_RELEASE);
}

static void open_curl(void)
{
	open_lib(LIB_CURL);
}

static void open_ssl(void)
{
	open_lib(LIB_SSL);
}

static void open_crypto(void)
{
	open_lib(LIB_CRYPTO);
}

static void open_nghttp2(void)
{
	open_lib(LIB_NGHTTP2);
}

static void (*const openers[N_LIBS])(void) = {open_curl, open_ssl, open_crypto, open_nghttp2};

/* Whether library l is open: before that, no object of it exists. */
static bool loaded(enum lazy_lib l)
{
	return __atomic_load_n(&handles[l], __ATOMIC_ACQUIRE) != NULL;
}

/* name in library l, which is opened first if it is not yet. */
static void *lazy_sym(enum lazy_lib l, const char *name)
{
	void *f;

	pthread_once(&onces[l], openers[l]);
	f = dlsym(handles[l], name);
	if (!f) {
		fprintf(stderr, "arborinth_proxy: %s lacks %s (a build against another version)\n",
			sonames[l], name);
		_exit(127);
	}
	return f;
}

/* The address of `name`, looked up once; the pointer is shared by every thread. */
#define LAZY_PTR(lib, name, f)                                                                     \
	do {                                                                                       \
		void *p_ = __atomic_load_n(&f, __ATOMIC_ACQUIRE);                                  \
		if (!p_) {                                                                         \
			p_ = lazy_sym(lib, #name);                                                 \
			__atomic_store_n(&f, p_, __ATOMIC_RELEASE);                                \
		}                                                                                  \
		*(void **)&fn = p_;                                                                \
	} while (0)

/* A function that returns a value (it may be the first call: it opens the library). */
#define LAZY_FWD(lib, ret, name, params, args)                                                     \
	ret name params                                                                            \
	{                                                                                          \
		static void *f;                                                                    \
		ret(*fn) params;                                                                   \
		LAZY_PTR(lib, name, f);                                                            \
		return fn args;                                                                    \
	}

/* One that returns nothing. */
#define LAZY_VOID(lib, name, params, args)                                                         \
	void name params                                                                           \
	{                                                                                          \
		static void *f;                                                                    \
		void(*fn) params;                                                                  \
		LAZY_PTR(lib, name, f);                                                            \
		fn args;                                                                           \
	}

/* One that frees what the library made: nothing to do while it is not open. */
#define LAZY_FREE(lib, name, params, args)                                                         \
	void name params                                                                           \
	{                                                                                          \
		static void *f;                                                                    \
		void(*fn) params;                                                                  \
		if (!loaded(lib))                                                                  \
			return;                                                                    \
		LAZY_PTR(lib, name, f);                                                            \
		fn args;                                                                           \
	}

/*
 * The variadic ones. An option's number says the type of its argument (curl.h's
 * CURLOPTTYPE_* ranges): it is read as that type and passed on as that type.
 */
CURLcode curl_easy_setopt(CURL *curl, CURLoption option, ...)
{
	static void *f;
	CURLcode (*fn)(CURL *, CURLoption, ...);
	CURLcode rc;
	va_list ap;

	LAZY_PTR(LIB_CURL, curl_easy_setopt, f);
	va_start(ap, option);
	if (option < CURLOPTTYPE_OBJECTPOINT)
		rc = fn(curl, option, va_arg(ap, long));
	else if (option < CURLOPTTYPE_FUNCTIONPOINT)
		rc = fn(curl, option, va_arg(ap, void *));
	else if (option < CURLOPTTYPE_OFF_T)
		rc = fn(curl, option, va_arg(ap, void (*)(void)));
	else if (option < CURLOPTTYPE_BLOB)
		rc = fn(curl, option, va_arg(ap, curl_off_t));
	else
		rc = fn(curl, option, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

/* Every CURLINFO_* takes a pointer to where the answer goes. */
CURLcode curl_easy_getinfo(CURL *curl, CURLINFO info, ...)
{
	static void *f;
	CURLcode (*fn)(CURL *, CURLINFO, ...);
	CURLcode rc;
	va_list ap;

	LAZY_PTR(LIB_CURL, curl_easy_getinfo, f);
	va_start(ap, info);
	rc = fn(curl, info, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

/* SHARE and UNSHARE take a curl_lock_data (an int), USERDATA a pointer, the rest functions. */
CURLSHcode curl_share_setopt(CURLSH *share, CURLSHoption option, ...)
{
	static void *f;
	CURLSHcode (*fn)(CURLSH *, CURLSHoption, ...);
	CURLSHcode rc;
	va_list ap;

	LAZY_PTR(LIB_CURL, curl_share_setopt, f);
	va_start(ap, option);
	if (option == CURLSHOPT_SHARE || option == CURLSHOPT_UNSHARE)
		rc = fn(share, option, va_arg(ap, int));
	else if (option == CURLSHOPT_USERDATA)
		rc = fn(share, option, va_arg(ap, void *));
	else
		rc = fn(share, option, va_arg(ap, void (*)(void)));
	va_end(ap);
	return rc;
}

/* EVP_EC_gen and EVP_RSA_gen: "EC" takes the curve's name, "RSA" the key's size, others none. */
EVP_PKEY *EVP_PKEY_Q_keygen(OSSL_LIB_CTX *libctx, const char *propq, const char *type, ...)
{
	static void *f;
	EVP_PKEY *(*fn)(OSSL_LIB_CTX *, const char *, const char *, ...);
	EVP_PKEY *k;
	va_list ap;

	LAZY_PTR(LIB_CRYPTO, EVP_PKEY_Q_keygen, f);
	va_start(ap, type);
	if (!strcmp(type, "EC"))
		k = fn(libctx, propq, type, va_arg(ap, char *));
	else if (!strcmp(type, "RSA"))
		k = fn(libctx, propq, type, va_arg(ap, size_t));
	else
		k = fn(libctx, propq, type);
	va_end(ap);
	return k;
}

/* The others: compat/gen-lazy-proxy.py's list, one line per function arborinth_proxy calls. */
LAZY_FWD(LIB_CRYPTO, long, BIO_ctrl, (BIO * a0, int a1, long a2, void *a3), (a0, a1, a2, a3))
LAZY_FWD(LIB_CRYPTO, int, BIO_free, (BIO * a0), (a0))
LAZY_FWD(LIB_CRYPTO, BIO *, BIO_new, (const BIO_METHOD *a0), (a0))
LAZY_FWD(LIB_CRYPTO, BIO *, BIO_new_mem_buf, (const void *a0, int a1), (a0, a1))
LAZY_FWD(LIB_CRYPTO, const BIO_METHOD *, BIO_s_mem, (void), ())
LAZY_FREE(LIB_CRYPTO, BN_free, (BIGNUM * a0), (a0))
LAZY_FWD(LIB_CRYPTO, BIGNUM *, BN_new, (void), ())
LAZY_FWD(LIB_CRYPTO, int, BN_rand, (BIGNUM * a0, int a1, int a2, int a3), (a0, a1, a2, a3))
LAZY_FWD(LIB_CRYPTO, ASN1_INTEGER *, BN_to_ASN1_INTEGER, (const BIGNUM *a0, ASN1_INTEGER *a1),
	 (a0, a1))
LAZY_VOID(LIB_CRYPTO, ERR_clear_error, (void), ())
LAZY_FWD(LIB_CRYPTO, unsigned long, ERR_get_error, (void), ())
LAZY_FWD(LIB_CRYPTO, const char *, ERR_reason_error_string, (unsigned long a0), (a0))
LAZY_FWD(LIB_CRYPTO, int, EVP_DigestFinal_ex,
	 (EVP_MD_CTX * a0, unsigned char *a1, unsigned int *a2), (a0, a1, a2))
LAZY_FWD(LIB_CRYPTO, int, EVP_DigestInit_ex, (EVP_MD_CTX * a0, const EVP_MD *a1, ENGINE *a2),
	 (a0, a1, a2))
LAZY_FWD(LIB_CRYPTO, int, EVP_DigestSign,
	 (EVP_MD_CTX * a0, unsigned char *a1, size_t *a2, const unsigned char *a3, size_t a4),
	 (a0, a1, a2, a3, a4))
LAZY_FWD(LIB_CRYPTO, int, EVP_DigestSignInit,
	 (EVP_MD_CTX * a0, EVP_PKEY_CTX **a1, const EVP_MD *a2, ENGINE *a3, EVP_PKEY *a4),
	 (a0, a1, a2, a3, a4))
LAZY_FWD(LIB_CRYPTO, int, EVP_DigestUpdate, (EVP_MD_CTX * a0, const void *a1, size_t a2),
	 (a0, a1, a2))
LAZY_FREE(LIB_CRYPTO, EVP_MD_CTX_free, (EVP_MD_CTX * a0), (a0))
LAZY_FWD(LIB_CRYPTO, EVP_MD_CTX *, EVP_MD_CTX_new, (void), ())
LAZY_FREE(LIB_CRYPTO, EVP_PKEY_free, (EVP_PKEY * a0), (a0))
LAZY_FWD(LIB_CRYPTO, int, EVP_PKEY_get_base_id, (const EVP_PKEY *a0), (a0))
LAZY_FWD(LIB_CRYPTO, const EVP_MD *, EVP_sha256, (void), ())
LAZY_FWD(LIB_CRYPTO, int, OBJ_txt2nid, (const char *a0), (a0))
LAZY_FWD(LIB_CRYPTO, EVP_PKEY *, PEM_read_bio_PrivateKey,
	 (BIO * a0, EVP_PKEY **a1, pem_password_cb *a2, void *a3), (a0, a1, a2, a3))
LAZY_FWD(LIB_CRYPTO, int, PEM_write_bio_X509, (BIO * a0, const X509 *a1), (a0, a1))
LAZY_FWD(LIB_SSL, int, SSL_CTX_check_private_key, (const SSL_CTX *a0), (a0))
LAZY_FWD(LIB_SSL, long, SSL_CTX_ctrl, (SSL_CTX * a0, int a1, long a2, void *a3), (a0, a1, a2, a3))
LAZY_FREE(LIB_SSL, SSL_CTX_free, (SSL_CTX * a0), (a0))
LAZY_FWD(LIB_SSL, int, SSL_CTX_load_verify_locations,
	 (SSL_CTX * a0, const char *a1, const char *a2), (a0, a1, a2))
LAZY_FWD(LIB_SSL, SSL_CTX *, SSL_CTX_new, (const SSL_METHOD *a0), (a0))
LAZY_FWD(LIB_SSL, int, SSL_CTX_set_alpn_protos,
	 (SSL_CTX * a0, const unsigned char *a1, unsigned int a2), (a0, a1, a2))
LAZY_FWD(LIB_SSL, int, SSL_CTX_set_default_verify_paths, (SSL_CTX * a0), (a0))
LAZY_VOID(LIB_SSL, SSL_CTX_set_verify, (SSL_CTX * a0, int a1, SSL_verify_cb a2), (a0, a1, a2))
LAZY_FWD(LIB_SSL, int, SSL_CTX_use_PrivateKey, (SSL_CTX * a0, EVP_PKEY *a1), (a0, a1))
LAZY_FWD(LIB_SSL, int, SSL_CTX_use_certificate, (SSL_CTX * a0, X509 *a1), (a0, a1))
LAZY_FWD(LIB_SSL, int, SSL_accept, (SSL * a0), (a0))
LAZY_FWD(LIB_SSL, int, SSL_connect, (SSL * a0), (a0))
LAZY_FWD(LIB_SSL, long, SSL_ctrl, (SSL * a0, int a1, long a2, void *a3), (a0, a1, a2, a3))
LAZY_FREE(LIB_SSL, SSL_free, (SSL * a0), (a0))
LAZY_VOID(LIB_SSL, SSL_get0_alpn_selected,
	  (const SSL *a0, const unsigned char **a1, unsigned int *a2), (a0, a1, a2))
LAZY_FWD(LIB_SSL, int, SSL_get_error, (const SSL *a0, int a1), (a0, a1))
LAZY_FWD(LIB_SSL, long, SSL_get_verify_result, (const SSL *a0), (a0))
LAZY_FWD(LIB_SSL, SSL *, SSL_new, (SSL_CTX * a0), (a0))
LAZY_FWD(LIB_SSL, int, SSL_pending, (const SSL *a0), (a0))
LAZY_FWD(LIB_SSL, int, SSL_read, (SSL * a0, void *a1, int a2), (a0, a1, a2))
LAZY_FWD(LIB_SSL, int, SSL_set1_host, (SSL * a0, const char *a1), (a0, a1))
LAZY_FWD(LIB_SSL, int, SSL_set_fd, (SSL * a0, int a1), (a0, a1))
LAZY_FWD(LIB_SSL, int, SSL_shutdown, (SSL * a0), (a0))
LAZY_FWD(LIB_SSL, int, SSL_write, (SSL * a0, const void *a1, int a2), (a0, a1, a2))
LAZY_FWD(LIB_SSL, const SSL_METHOD *, TLS_client_method, (void), ())
LAZY_FWD(LIB_SSL, const SSL_METHOD *, TLS_server_method, (void), ())
LAZY_FWD(LIB_CRYPTO, X509_EXTENSION *, X509V3_EXT_conf_nid,
	 (struct lhash_st_CONF_VALUE * a0, X509V3_CTX *a1, int a2, const char *a3),
	 (a0, a1, a2, a3))
LAZY_VOID(LIB_CRYPTO, X509V3_set_ctx,
	  (X509V3_CTX * a0, X509 *a1, X509 *a2, X509_REQ *a3, X509_CRL *a4, int a5),
	  (a0, a1, a2, a3, a4, a5))
LAZY_FREE(LIB_CRYPTO, X509_EXTENSION_free, (X509_EXTENSION * a0), (a0))
LAZY_FWD(LIB_CRYPTO, int, X509_NAME_add_entry_by_txt,
	 (X509_NAME * a0, const char *a1, int a2, const unsigned char *a3, int a4, int a5, int a6),
	 (a0, a1, a2, a3, a4, a5, a6))
LAZY_FWD(LIB_CRYPTO, int, X509_add_ext, (X509 * a0, X509_EXTENSION *a1, int a2), (a0, a1, a2))
LAZY_FREE(LIB_CRYPTO, X509_free, (X509 * a0), (a0))
LAZY_FWD(LIB_CRYPTO, ASN1_INTEGER *, X509_get_serialNumber, (X509 * a0), (a0))
LAZY_FWD(LIB_CRYPTO, X509_NAME *, X509_get_subject_name, (const X509 *a0), (a0))
LAZY_FWD(LIB_CRYPTO, ASN1_TIME *, X509_getm_notAfter, (const X509 *a0), (a0))
LAZY_FWD(LIB_CRYPTO, ASN1_TIME *, X509_getm_notBefore, (const X509 *a0), (a0))
LAZY_FWD(LIB_CRYPTO, ASN1_TIME *, X509_gmtime_adj, (ASN1_TIME * a0, long a1), (a0, a1))
LAZY_FWD(LIB_CRYPTO, X509 *, X509_new, (void), ())
LAZY_FWD(LIB_CRYPTO, int, X509_set_issuer_name, (X509 * a0, const X509_NAME *a1), (a0, a1))
LAZY_FWD(LIB_CRYPTO, int, X509_set_pubkey, (X509 * a0, EVP_PKEY *a1), (a0, a1))
LAZY_FWD(LIB_CRYPTO, int, X509_set_version, (X509 * a0, long a1), (a0, a1))
LAZY_FWD(LIB_CRYPTO, int, X509_sign, (X509 * a0, EVP_PKEY *a1, const EVP_MD *a2), (a0, a1, a2))
LAZY_FWD(LIB_CRYPTO, const char *, X509_verify_cert_error_string, (long a0), (a0))
LAZY_FREE(LIB_CURL, curl_easy_cleanup, (CURL * a0), (a0))
LAZY_FWD(LIB_CURL, char *, curl_easy_escape, (CURL * a0, const char *a1, int a2), (a0, a1, a2))
LAZY_FWD(LIB_CURL, CURL *, curl_easy_init, (void), ())
LAZY_FWD(LIB_CURL, CURLcode, curl_easy_perform, (CURL * a0), (a0))
LAZY_VOID(LIB_CURL, curl_easy_reset, (CURL * a0), (a0))
LAZY_FWD(LIB_CURL, const char *, curl_easy_strerror, (CURLcode a0), (a0))
LAZY_FREE(LIB_CURL, curl_free, (void *a0), (a0))
LAZY_FWD(LIB_CURL, CURLcode, curl_global_init, (long a0), (a0))
LAZY_FWD(LIB_CURL, CURLSHcode, curl_share_cleanup, (CURLSH * a0), (a0))
LAZY_FWD(LIB_CURL, CURLSH *, curl_share_init, (void), ())
LAZY_FWD(LIB_CURL, struct curl_slist *, curl_slist_append, (struct curl_slist * a0, const char *a1),
	 (a0, a1))
LAZY_FREE(LIB_CURL, curl_slist_free_all, (struct curl_slist * a0), (a0))
LAZY_FWD(LIB_CURL, CURLU *, curl_url, (void), ())
LAZY_FREE(LIB_CURL, curl_url_cleanup, (CURLU * a0), (a0))
LAZY_FWD(LIB_CURL, CURLUcode, curl_url_get,
	 (const CURLU *a0, CURLUPart a1, char **a2, unsigned int a3), (a0, a1, a2, a3))
LAZY_FWD(LIB_CURL, CURLUcode, curl_url_set,
	 (CURLU * a0, CURLUPart a1, const char *a2, unsigned int a3), (a0, a1, a2, a3))
LAZY_FREE(LIB_NGHTTP2, nghttp2_option_del, (nghttp2_option * a0), (a0))
LAZY_FWD(LIB_NGHTTP2, int, nghttp2_option_new, (nghttp2_option * *a0), (a0))
LAZY_VOID(LIB_NGHTTP2, nghttp2_option_set_no_auto_window_update, (nghttp2_option * a0, int a1),
	  (a0, a1))
LAZY_FREE(LIB_NGHTTP2, nghttp2_session_callbacks_del, (nghttp2_session_callbacks * a0), (a0))
LAZY_FWD(LIB_NGHTTP2, int, nghttp2_session_callbacks_new, (nghttp2_session_callbacks * *a0), (a0))
LAZY_VOID(LIB_NGHTTP2, nghttp2_session_callbacks_set_on_begin_headers_callback,
	  (nghttp2_session_callbacks * a0, nghttp2_on_begin_headers_callback a1), (a0, a1))
LAZY_VOID(LIB_NGHTTP2, nghttp2_session_callbacks_set_on_data_chunk_recv_callback,
	  (nghttp2_session_callbacks * a0, nghttp2_on_data_chunk_recv_callback a1), (a0, a1))
LAZY_VOID(LIB_NGHTTP2, nghttp2_session_callbacks_set_on_frame_recv_callback,
	  (nghttp2_session_callbacks * a0, nghttp2_on_frame_recv_callback a1), (a0, a1))
LAZY_VOID(LIB_NGHTTP2, nghttp2_session_callbacks_set_on_header_callback,
	  (nghttp2_session_callbacks * a0, nghttp2_on_header_callback a1), (a0, a1))
LAZY_VOID(LIB_NGHTTP2, nghttp2_session_callbacks_set_on_stream_close_callback,
	  (nghttp2_session_callbacks * a0, nghttp2_on_stream_close_callback a1), (a0, a1))
LAZY_VOID(LIB_NGHTTP2, nghttp2_session_callbacks_set_send_callback,
	  (nghttp2_session_callbacks * a0, nghttp2_send_callback a1), (a0, a1))
LAZY_FWD(LIB_NGHTTP2, int, nghttp2_session_client_new2,
	 (nghttp2_session * *a0, const nghttp2_session_callbacks *a1, void *a2,
	  const nghttp2_option *a3),
	 (a0, a1, a2, a3))
LAZY_FWD(LIB_NGHTTP2, int, nghttp2_session_consume, (nghttp2_session * a0, int32_t a1, size_t a2),
	 (a0, a1, a2))
LAZY_FREE(LIB_NGHTTP2, nghttp2_session_del, (nghttp2_session * a0), (a0))
LAZY_FWD(LIB_NGHTTP2, void *, nghttp2_session_get_stream_user_data,
	 (nghttp2_session * a0, int32_t a1), (a0, a1))
LAZY_FWD(LIB_NGHTTP2, ssize_t, nghttp2_session_mem_recv,
	 (nghttp2_session * a0, const uint8_t *a1, size_t a2), (a0, a1, a2))
LAZY_FWD(LIB_NGHTTP2, int, nghttp2_session_resume_data, (nghttp2_session * a0, int32_t a1),
	 (a0, a1))
LAZY_FWD(LIB_NGHTTP2, int, nghttp2_session_send, (nghttp2_session * a0), (a0))
LAZY_FWD(LIB_NGHTTP2, int, nghttp2_session_server_new2,
	 (nghttp2_session * *a0, const nghttp2_session_callbacks *a1, void *a2,
	  const nghttp2_option *a3),
	 (a0, a1, a2, a3))
LAZY_FWD(LIB_NGHTTP2, int, nghttp2_session_set_local_window_size,
	 (nghttp2_session * a0, uint8_t a1, int32_t a2, int32_t a3), (a0, a1, a2, a3))
LAZY_FWD(LIB_NGHTTP2, int, nghttp2_session_set_stream_user_data,
	 (nghttp2_session * a0, int32_t a1, void *a2), (a0, a1, a2))
LAZY_FWD(LIB_NGHTTP2, int, nghttp2_session_terminate_session, (nghttp2_session * a0, uint32_t a1),
	 (a0, a1))
LAZY_FWD(LIB_NGHTTP2, int, nghttp2_session_want_read, (nghttp2_session * a0), (a0))
LAZY_FWD(LIB_NGHTTP2, int, nghttp2_session_want_write, (nghttp2_session * a0), (a0))
LAZY_FWD(LIB_NGHTTP2, int32_t, nghttp2_submit_request,
	 (nghttp2_session * a0, const nghttp2_priority_spec *a1, const nghttp2_nv *a2, size_t a3,
	  const nghttp2_data_provider *a4, void *a5),
	 (a0, a1, a2, a3, a4, a5))
LAZY_FWD(LIB_NGHTTP2, int, nghttp2_submit_response,
	 (nghttp2_session * a0, int32_t a1, const nghttp2_nv *a2, size_t a3,
	  const nghttp2_data_provider *a4),
	 (a0, a1, a2, a3, a4))
LAZY_FWD(LIB_NGHTTP2, int, nghttp2_submit_rst_stream,
	 (nghttp2_session * a0, uint8_t a1, int32_t a2, uint32_t a3), (a0, a1, a2, a3))
LAZY_FWD(LIB_NGHTTP2, int, nghttp2_submit_settings,
	 (nghttp2_session * a0, uint8_t a1, const nghttp2_settings_entry *a2, size_t a3),
	 (a0, a1, a2, a3))
LAZY_FWD(LIB_NGHTTP2, int, nghttp2_submit_trailer,
	 (nghttp2_session * a0, int32_t a1, const nghttp2_nv *a2, size_t a3), (a0, a1, a2, a3))
