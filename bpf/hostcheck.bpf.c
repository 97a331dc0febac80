// SPDX-License-Identifier: MIT
/* `bpfpy check`: the smallest uprobe, so that the check proves a uprobe
 * attaches and fires rather than only that the kernel has the feature. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

__u64 hits = 0;

SEC("uprobe")
int check_uprobe(void *ctx)
{
	(void)ctx;
	__sync_fetch_and_add(&hits, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
