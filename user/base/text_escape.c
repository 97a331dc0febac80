// SPDX-License-Identifier: MIT
/*
 * The escaper and the folded-key sanitizer. See text_escape.h for the rules
 * and why they are what they are.
 */
#include "text_escape.h"

#include <stdint.h>
#include <string.h>

int utf8_seq_len(const char *s)
{
	const unsigned char *c = (const unsigned char *)s;
	uint32_t cp = 0;
	int n = 0;

	if (*c < 0x80)
		return 1;
	if ((*c & 0xe0) == 0xc0 && *c >= 0xc2)
		n = 2, cp = *c & 0x1f;
	else if ((*c & 0xf0) == 0xe0)
		n = 3, cp = *c & 0x0f;
	else if ((*c & 0xf8) == 0xf0 && *c <= 0xf4)
		n = 4, cp = *c & 0x07;
	for (int k = 1; k < n; k++) {
		/* A NUL is not a continuation byte, so this never reads past
		 * the end of the string. */
		if ((c[k] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (c[k] & 0x3f);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return n;
}

size_t text_escape(char *dst, size_t size, const char *src, int flags)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0, w = 0; /* needed, written */

	if (!src)
		src = "";
	while (*src) {
		unsigned char c = (unsigned char)*src;
		char piece[8];
		size_t n = 0;
		int len = utf8_seq_len(src);

		if (len == 1 && c >= 0x20 && c != 0x7f && c != '\\') {
			piece[n++] = flags & TEXT_FOLDED && c == ';' ? ':' : (char)c;
		} else if (len == 1 && c == '\\') {
			piece[n++] = '\\';
			piece[n++] = '\\';
		} else if (len > 1 && !(c == 0xc2 && (unsigned char)src[1] < 0xa0)) {
			memcpy(piece, src, (size_t)len);
			n = (size_t)len;
		} else {
			/* Controls and stray bytes: \xNN. C1 controls (c2 80..c2
			 * 9f) are well-formed UTF-8, but some terminals act on
			 * them as on C0 ones: their first byte is escaped, and
			 * the second, alone, is then a stray byte. */
			piece[n++] = '\\';
			piece[n++] = 'x';
			piece[n++] = hex[c >> 4];
			piece[n++] = hex[c & 15];
			len = 1;
		}
		/* Whole pieces only, and only while every earlier one fit. */
		if (w == o && o + n < size) {
			memcpy(dst + o, piece, n);
			w += n;
		}
		o += n;
		src += len;
	}
	if (size)
		dst[w] = 0;
	return o;
}

const char *text_esc(const char *src, char *buf, size_t size)
{
	text_escape(buf, size, src, 0);
	return buf;
}

void text_put(FILE *f, const char *src)
{
	char buf[512];
	size_t room = TEXT_PUT_MAX;

	/* In chunks of whole characters; past the bound, a cut marked "…". */
	for (const char *s = src ? src : ""; *s;) {
		char chunk[64];
		size_t k = 0, need;

		while (s[k] && k < sizeof(chunk) - 5) {
			int len = utf8_seq_len(s + k);

			k += len > 0 ? (size_t)len : 1;
		}
		memcpy(chunk, s, k);
		chunk[k] = 0;
		need = text_escape(buf, room + 1 < sizeof(buf) ? room + 1 : sizeof(buf), chunk, 0);
		fputs(buf, f);
		if (need > room) {
			fputs("\xe2\x80\xa6", f);
			return;
		}
		room -= need;
		s += k;
	}
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

long text_unescape(char *dst, size_t size, const char *src)
{
	size_t o = 0;

	for (; *src; src++) {
		char c = *src;

		if (c == '\\') {
			if (src[1] == '\\') {
				src++;
			} else if (src[1] == 'x' && hexval(src[2]) >= 0 && hexval(src[3]) >= 0) {
				c = (char)(hexval(src[2]) << 4 | hexval(src[3]));
				src += 3;
			} else {
				return -1;
			}
		}
		if (o + 1 >= size)
			return -1;
		dst[o++] = c;
	}
	if (!size)
		return -1;
	dst[o] = 0;
	return (long)o;
}
