// SPDX-License-Identifier: MIT
#include "diag.h"
#include "privilege.h"
#include "text_escape.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void vset(struct diag *d, int code, int err, const char *fmt, va_list ap)
{
	size_t n;

	d->code = code;
	d->sys_errno = err;
	vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
	if (!err)
		return;
	n = strlen(d->msg);
	snprintf(d->msg + n, sizeof(d->msg) - n, ": %s", strerror(err));
	if (err == EPERM || err == EACCES) {
		n = strlen(d->msg);
		if (n + 1 < sizeof(d->msg)) {
			d->msg[n++] = ' ';
			priv_explain(d->msg + n, sizeof(d->msg) - n);
		}
	}
}

int diag_set(struct diag *d, int code, const char *fmt, ...)
{
	va_list ap;

	if (!d)
		return -1;
	va_start(ap, fmt);
	vset(d, code, 0, fmt, ap);
	va_end(ap);
	return -1;
}

int diag_errno(struct diag *d, int err, const char *fmt, ...)
{
	va_list ap;
	int code = EXIT_FAIL;

	if (!d)
		return -1;
	if (err == ESRCH)
		code = EXIT_NO_PROCESS;
	else if (err == EPERM || err == EACCES)
		code = EXIT_PERMISSION;
	va_start(ap, fmt);
	vset(d, code, err, fmt, ap);
	va_end(ap);
	return -1;
}

void diag_prefix(struct diag *d, const char *fmt, ...)
{
	char old[sizeof(d->msg)];
	va_list ap;
	int n;

	if (!d)
		return;
	memcpy(old, d->msg, sizeof(old));
	va_start(ap, fmt);
	n = vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(d->msg))
		return;
	/* Truncation of the old message is fine: the prefix matters more. */
	memcpy(d->msg + n, old, sizeof(d->msg) - (size_t)n - 1);
	d->msg[sizeof(d->msg) - 1] = 0;
}

int diag_report(const struct diag *d)
{
	/* Messages quote paths and names a target chose: escaped, so they
	 * cannot drive the terminal or forge a line. */
	fputs("bpfpy: ", stderr);
	text_put(stderr, d->msg[0] ? d->msg : "unknown error");
	fputc('\n', stderr);
	return d->code ? d->code : EXIT_FAIL;
}
