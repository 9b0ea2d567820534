/*
 * core/entry_name.c: which tree entry names host-side code may turn into a file name. The
 * names come from trees the box may have written (its own commits, a forged object), so
 * each is checked before any filesystem call, as git's checkout checks a path component
 * (verify_path with core.protectNTFS and core.protectHFS on): not empty, not "." or "..",
 * no '/' or NUL, and not ".git" in any case nor one of the names NTFS or HFS+ take for it
 * (".git." / ".git " / ".git::$INDEX_ALLOCATION" / "git~1", ".g\u200cit").
 */
#include "core/core_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* NTFS: ".git" or "git~1", in any case, then only dots and spaces, or an ':' (a stream). */
static bool ntfs_dotgit(const char *s, size_t len)
{
	size_t i;

	if (len >= 4 && s[0] == '.' && !strncasecmp(s + 1, "git", 3))
		i = 4;
	else if (len >= 5 && !strncasecmp(s, "git~1", 5))
		i = 5;
	else
		return false;
	for (; i < len; i++) {
		if (s[i] == ':' || s[i] == '\\')
			return true;
		if (s[i] != '.' && s[i] != ' ')
			return false;
	}
	return true;
}

/*
 * The byte length of the code point HFS+ ignores in a name at s (len bytes left), or 0:
 * U+200C-U+200F, U+202A-U+202E, U+206A-U+206F and U+FEFF, in UTF-8.
 */
static size_t hfs_ignorable(const unsigned char *s, size_t len)
{
	if (len < 3)
		return 0;
	if (s[0] == 0xe2 && s[1] == 0x80 &&
	    ((s[2] >= 0x8c && s[2] <= 0x8f) || (s[2] >= 0xaa && s[2] <= 0xae)))
		return 3;
	if (s[0] == 0xe2 && s[1] == 0x81 && s[2] >= 0xaa && s[2] <= 0xaf)
		return 3;
	if (s[0] == 0xef && s[1] == 0xbb && s[2] == 0xbf)
		return 3;
	return 0;
}

/* HFS+: ".git" in any case once the ignorable code points are left out. */
static bool hfs_dotgit(const char *name, size_t len)
{
	const unsigned char *s = (const unsigned char *)name;
	const char *want = ".git";
	size_t i = 0, k = 0, skip;

	while (i < len) {
		if ((skip = hfs_ignorable(s + i, len - i))) {
			i += skip;
			continue;
		}
		if (k == 4 || (s[i] | 0x20) != (unsigned char)want[k] ||
		    (want[k] == '.' && s[i] != '.'))
			return false;
		i++;
		k++;
	}
	return k == 4;
}

bool core_entry_name_ok(const char *name, size_t len)
{
	if (!name || len == 0 || memchr(name, '\0', len) || memchr(name, '/', len))
		return false;
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return false;
	return !ntfs_dotgit(name, len) && !hfs_dotgit(name, len);
}

int core_entry_name_check(const char *name, const char *what)
{
	char shown[4 * 48 + 4];
	size_t k = 0;

	if (core_entry_name_ok(name, name ? strlen(name) : 0))
		return 0;
	/* The name is the box's: shown with every byte outside printable ASCII escaped. */
	for (const unsigned char *c = (const unsigned char *)(name ? name : ""); *c; c++) {
		if (k > sizeof(shown) - 8) {
			k += (size_t)snprintf(shown + k, sizeof(shown) - k, "...");
			break;
		}
		if (*c >= 0x20 && *c < 0x7f && *c != '\\')
			shown[k++] = (char)*c;
		else
			k += (size_t)snprintf(shown + k, sizeof(shown) - k, "\\x%02x", *c);
	}
	shown[k] = '\0';
	return util_err(-EINVAL,
			"%s: refusing a tree entry named '%s' (empty, '.', '..', with a '/', or "
			"'.git' by another name)",
			what, shown);
}
