/*
 * util/jsonc.c: JSON with comments (the JSONC that editors and tools such as OpenCode and VS
 * Code accept) turned into JSON in place, so a strict parser (jansson) reads it.
 */
#include "util/util.h"

#include <stdbool.h>
#include <string.h>

void util_jsonc_strip(char *s, size_t len)
{
	size_t comma = (size_t)-1; /* a ',' that may turn out to be trailing */

	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (c == '"') {
			comma = (size_t)-1;
			for (i++; i < len && s[i] != '"'; i++)
				if (s[i] == '\\' && i + 1 < len)
					i++;
		} else if (c == '/' && i + 1 < len && s[i + 1] == '/') {
			for (; i < len && s[i] != '\n'; i++)
				s[i] = ' ';
		} else if (c == '/' && i + 1 < len && s[i + 1] == '*') {
			size_t j = i + 2;

			while (j + 1 < len && !(s[j] == '*' && s[j + 1] == '/'))
				j++;
			j = j + 1 < len ? j + 2 : len; /* an open comment runs to the end */
			for (; i < j; i++)
				if (s[i] != '\n')
					s[i] = ' ';
			i--;
		} else if (c == ',') {
			comma = i;
		} else if ((c == '}' || c == ']') && comma != (size_t)-1) {
			s[comma] = ' ';
			comma = (size_t)-1;
		} else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
			comma = (size_t)-1;
		}
	}
}
