/* SPDX-License-Identifier: MIT */
/*
 * The one escaper for strings a target supplies (qualnames, file names,
 * thread names, comms, module paths) wherever bpfpy prints them as text,
 * and the one sanitizer for names in folded (collapsed) keys.
 *
 * A target can name a function "\x1b[2J...\nThread 1 (GIL held):" and a
 * root tool must neither send that to its user's terminal nor let it forge
 * an output line. The rules (README "Output"):
 *
 *   - printable ASCII and well-formed UTF-8 are kept as they are, spaces too;
 *   - a backslash becomes "\\";
 *   - a C0 control (0x00-0x1f: ESC, BEL, CR, LF, TAB...), DEL (0x7f), a C1
 *     control (U+0080-U+009F, which some terminals obey) and every byte
 *     that is not part of well-formed UTF-8 become "\xNN" (lowercase hex),
 *     one escape per byte;
 *   - TEXT_FOLDED, for folded keys only: ';' (the frame separator) becomes
 *     ':', as it always did in record's output.
 *
 * Without TEXT_FOLDED the mapping is reversible (text_unescape) and every
 * item stays on one line. JSON output does not use this: json-c escapes.
 */
#ifndef TEXT_ESCAPE_H
#define TEXT_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

#define TEXT_FOLDED 1 /* also ';' -> ':' (folded/collapsed keys) */

/* The length of the well-formed UTF-8 sequence at s (1 to 4; 1 for ASCII
 * including NUL), or 0 when the byte at s does not start one: overlong
 * forms, surrogates and code points past U+10FFFF are not well-formed. */
int utf8_seq_len(const char *s);

/* Escape src (NULL as "") into dst of size bytes, always NUL-terminated
 * when size > 0; an escape is never cut in half. Returns the length the
 * whole escaped string needs (as snprintf does), so a caller can tell a
 * cut: >= size. dst and src must not overlap. */
size_t text_escape(char *dst, size_t size, const char *src, int flags);

/* The escaped src in buf, for "%s" in printf-style calls. Returns buf. */
const char *text_esc(const char *src, char *buf, size_t size);

/* fputs of the escaped src, at most TEXT_PUT_MAX bytes of it: past that the
 * escaped text is cut at a whole character or escape and "…" follows, so a
 * printed item stays bounded (names are read at most 4096 bytes long, but
 * their escaped form can be four times longer). */
#define TEXT_PUT_MAX 4096
void text_put(FILE *f, const char *src);

/* The inverse of text_escape without TEXT_FOLDED: "\\" and "\xNN" decoded.
 * Returns the decoded length (it may hold NUL bytes), or -1 when src is not
 * something text_escape writes or dst is too small. */
long text_unescape(char *dst, size_t size, const char *src);

#endif /* TEXT_ESCAPE_H */
