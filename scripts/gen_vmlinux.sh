#!/bin/sh
# Regenerate vmlinux.h from the running kernel's BTF. The result is committed:
# CO-RE relocates field offsets at load time, so one header serves any kernel
# with BTF. Run it again only to use types a newer kernel adds.
set -eu
out=${1:-vmlinux/x86/vmlinux.h}
[ -r /sys/kernel/btf/vmlinux ] || { echo "gen_vmlinux: no /sys/kernel/btf/vmlinux (kernel without BTF)" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
bpftool btf dump file /sys/kernel/btf/vmlinux format c > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out ($(wc -l < "$out") lines) from $(uname -r)"
