/* SPDX-License-Identifier: MIT */
/* The user-space build of the one frame walker and its naming: reads go through a
 * struct mem_reader (process_vm_readv, or a memory image in tests). */
#ifndef WALKER_USER_H
#define WALKER_USER_H

#include "mem_reader.h"

#define WALK_READER_T		      struct mem_reader
#define WALK_READ(r, dst, size, addr) mem_read((r), (dst), (size), (addr))

#include "frame_walker.h"
#include "code_name.h"

#endif /* WALKER_USER_H */
