/*
 * proxy/reapi_scan.c: the instance check on a reapi stream's request messages. Every top-level
 * field 1 of every request message (instance_name, or ByteStream's resource_name) is checked,
 * not only the first one: protobuf keeps the last value of a repeated singular field, so a
 * message "main" then "other" is "other" to the server. The scan is incremental: bytes are
 * released toward the upstream only once every field before them was checked, and a
 * message's last byte only once the whole message was, so the server never decodes a message
 * the scan has not passed. A field 1 needs at most ~4 KiB held; other fields stream through.
 */
#include "proxy/reapi_internal.h"

#include <errno.h>
#include <string.h>

#define FIELD1_MAX 4096

/* A protobuf varint: its length (0 when incomplete or longer than 10 bytes). */
static size_t varint(const unsigned char *p, size_t n, uint64_t *v)
{
	*v = 0;
	for (size_t i = 0; i < n && i < 10; i++) {
		*v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
		if (!(p[i] & 0x80))
			return i + 1;
	}
	return 0;
}

void proxy_reapi_scan_init(struct proxy_reapi_scan *sc, const struct proxy_reapi *r,
			   const char *path)
{
	memset(sc, 0, sizeof(*sc));
	sc->bytestream = path && util_str_has_prefix(path, "/google.bytestream.");
	/* Nothing to check, or an operation name (not checked): everything passes. */
	sc->off = !r->instance || !path || util_str_has_prefix(path, "/google.longrunning.") ||
		  strstr(path, "/WaitExecution");
	sc->ready = sc->off;
}

/*
 * After the instance, a resource name's components: "blobs/..." has the keyword "blobs" first
 * and no other, "uploads/UUID/blobs|compressed-blobs/..." has "uploads" first, the second
 * keyword third and no other, no component is empty. A server that finds the instance by the
 * last keyword, or by the component before it, finds the prefix: never "main/blobs/other/blobs".
 */
static bool resource_ok(const unsigned char *v, size_t len)
{
	static const char *const kw[] = {"blobs", "uploads", "compressed-blobs"};
	size_t i = 0, k = 0;
	bool uploads = false;

	for (size_t at = 0; at <= len; k++) {
		const unsigned char *e = memchr(v + at, '/', len - at);
		size_t n = e ? (size_t)(e - (v + at)) : len - at;
		int w = -1;

		for (size_t j = 0; j < ARB_ARRAY_LEN(kw); j++)
			if (n == strlen(kw[j]) && !memcmp(v + at, kw[j], n))
				w = (int)j;
		if (n == 0)
			return false;
		if (k == 0)
			uploads = w == 1;
		if (k == 0 ? w != 0 && w != 1 : (uploads && k == 2) ? w != 0 && w != 2 : w != -1)
			return false;
		i++;
		at += n + 1;
	}
	return i >= (uploads ? 5 : 3); /* at least a hash and a size after the keyword */
}

/* One field 1 value: the instance, or ByteStream's "{instance}/blobs|uploads/...". */
static bool field1_ok(const struct proxy_reapi *r, bool bytestream, const unsigned char *v,
		      size_t len)
{
	size_t il = strlen(r->instance);

	if (!bytestream)
		return len == il && !memcmp(v, r->instance, il);
	if (il) {
		if (len <= il || memcmp(v, r->instance, il) || v[il] != '/')
			return false;
		v += il + 1;
		len -= il + 1;
	}
	if (memmem(v, len, "..", 2) || memchr(v, '\0', len))
		return false;
	return resource_ok(v, len);
}

/* The end of a message: the first one must have named the instance (or "" for none). */
static int msg_end(struct proxy_reapi_scan *sc, const struct proxy_reapi *r)
{
	if (sc->msgs == 0 && !sc->seen1 && (sc->bytestream || *r->instance))
		return -EPERM;
	sc->in_msg = false;
	sc->seen1 = false;
	sc->msgs++;
	sc->ready = true;
	return 0;
}

/* Takes k bytes of the current message (the end checked before its last byte is released). */
static int take(struct proxy_reapi_scan *sc, const struct proxy_reapi *r, size_t k, size_t *ok)
{
	if (sc->in_msg) {
		if (k > sc->left)
			return -EPERM;
		sc->left -= k;
		if (sc->left == 0 && msg_end(sc, r) < 0)
			return -EPERM;
	}
	*ok += k;
	return 0;
}

int proxy_reapi_scan(struct proxy_reapi_scan *sc, const struct proxy_reapi *r,
		     const unsigned char *p, size_t n, bool complete, size_t *ok)
{
	*ok = 0;
	if (sc->off) {
		*ok = n;
		return 0;
	}
	while (*ok < n) {
		const unsigned char *q = p + *ok;
		size_t avail = n - *ok, room, vl, ll;
		uint64_t tag, len;

		if (sc->skip) {
			size_t k = sc->skip < avail ? (size_t)sc->skip : avail;

			sc->skip -= k;
			if (take(sc, r, k, ok) < 0)
				return -EPERM;
			continue;
		}
		if (!sc->in_msg) {
			if (avail < 5)
				break;
			if (q[0] != 0) /* compressed (or a reserved flag): cannot be read */
				return -EPERM;
			sc->left = (uint32_t)q[1] << 24 | (uint32_t)q[2] << 16 |
				   (uint32_t)q[3] << 8 | q[4];
			sc->in_msg = true;
			*ok += 5;
			if (sc->left == 0 && msg_end(sc, r) < 0)
				return -EPERM;
			continue;
		}
		room = avail < sc->left ? avail : sc->left;
		vl = varint(q, room, &tag);
		if (!vl) {
			if (room >= 10 || room == sc->left)
				return -EPERM; /* overlong, or past the message's end */
			break;
		}
		/* Parsers differ on tags past 32 bits (some truncate): refused. */
		if (tag >> 32 || (tag >> 3) == 0)
			return -EPERM;
		switch (tag & 7) {
		case 0: /* varint */
			ll = varint(q + vl, room - vl, &len);
			if (!ll) {
				if (room - vl >= 10 || room == sc->left)
					return -EPERM;
				goto more;
			}
			if ((tag >> 3) == 1 || take(sc, r, vl + ll, ok) < 0)
				return -EPERM;
			break;
		case 1: /* fixed64 */
		case 5: /* fixed32 */
			if ((tag >> 3) == 1 || take(sc, r, vl, ok) < 0)
				return -EPERM;
			sc->skip = (tag & 7) == 1 ? 8 : 4;
			break;
		case 2: /* length-delimited */
			ll = varint(q + vl, room - vl, &len);
			if (!ll) {
				if (room - vl >= 10 || room == sc->left)
					return -EPERM;
				goto more;
			}
			if (len > sc->left - vl - ll)
				return -EPERM;
			if ((tag >> 3) != 1) {
				if (take(sc, r, vl + ll, ok) < 0)
					return -EPERM;
				sc->skip = len;
				break;
			}
			if (len > FIELD1_MAX)
				return -EPERM;
			if (avail - vl - ll < len)
				goto more;
			if (!field1_ok(r, sc->bytestream, q + vl + ll, (size_t)len))
				return -EPERM;
			if (sc->msgs == 0)
				sc->ready = true; /* the first message named an allowed instance */
			sc->seen1 = true;
			if (take(sc, r, vl + ll + (size_t)len, ok) < 0)
				return -EPERM;
			break;
		default: /* groups: no REAPI message has them */
			return -EPERM;
		}
	}
more:
	/* The request ended: nothing may be left unchecked, and there was a first message. */
	if (complete && (*ok < n || sc->in_msg || sc->msgs == 0))
		return -EPERM;
	return 0;
}
