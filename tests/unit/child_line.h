/* SPDX-License-Identifier: MIT */
/*
 * For unit tests that start a real interpreter on a pipe: one line of what
 * it printed, waited for with a deadline (a cold start under load can take
 * seconds), never forever.
 */
#ifndef CHILD_LINE_H
#define CHILD_LINE_H

#include <poll.h>
#include <stddef.h>
#include <unistd.h>

/* One line from fd into buf, without its newline, within 60 s: 0, or -1
 * on EOF or timeout. */
static inline int child_read_line(int fd, char *buf, size_t len)
{
	size_t n = 0;

	while (n + 1 < len) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};

		if (poll(&pf, 1, 60000) != 1 || read(fd, buf + n, 1) != 1)
			return -1;
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = '\0';
	return 0;
}

#endif /* CHILD_LINE_H */
