/* SPDX-License-Identifier: MIT */
/*
 * Dense ids for 64-bit keys: the n-th distinct key interned gets id n. The
 * writers that build tables of their own from a profile (pstats' caller
 * edges, gecko's per-thread frame and stack tables) key them by pairs of
 * small ids packed into 64 bits; this is their one map.
 */
#ifndef ID_MAP_H
#define ID_MAP_H

#include <stdint.h>

struct id_map {
	uint64_t *keys;
	uint32_t *ids; /* id + 1; 0 empty */
	uint32_t cap, n;
};

/* The id of key, a new one (m->n before the call) if unseen, *fresh then
 * set (fresh may be NULL). -1 on ENOMEM or past 2^31 keys. */
int64_t id_map_intern(struct id_map *m, uint64_t key, int *fresh);
/* The id of key, or -1. */
int64_t id_map_find(const struct id_map *m, uint64_t key);
/* Forget every key (the memory stays for the next round). */
void id_map_clear(struct id_map *m);
void id_map_free(struct id_map *m);

#endif /* ID_MAP_H */
