// SPDX-License-Identifier: MIT
#include "commands.h"
int cmd_top(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return 1;
}
