// SPDX-License-Identifier: MIT
/* Open addressing, kept at most half full so that a probe always ends. */
#include "id_map.h"

#include <stdlib.h>
#include <string.h>

static uint32_t slot_of(uint64_t key, uint32_t cap)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return (uint32_t)key & (cap - 1);
}

static int grow(struct id_map *m)
{
	uint32_t ncap = m->cap ? m->cap * 2 : 256;
	uint64_t *keys = calloc(ncap, sizeof(*keys));
	uint32_t *ids = calloc(ncap, sizeof(*ids));

	if (!keys || !ids || ncap < m->cap) {
		free(keys);
		free(ids);
		return -1;
	}
	for (uint32_t i = 0; i < m->cap; i++) {
		uint32_t j;

		if (!m->ids[i])
			continue;
		for (j = slot_of(m->keys[i], ncap); ids[j]; j = (j + 1) & (ncap - 1))
			;
		keys[j] = m->keys[i];
		ids[j] = m->ids[i];
	}
	free(m->keys);
	free(m->ids);
	m->keys = keys;
	m->ids = ids;
	m->cap = ncap;
	return 0;
}

int64_t id_map_find(const struct id_map *m, uint64_t key)
{
	if (!m->cap)
		return -1;
	for (uint32_t j = slot_of(key, m->cap); m->ids[j]; j = (j + 1) & (m->cap - 1))
		if (m->keys[j] == key)
			return m->ids[j] - 1;
	return -1;
}

int64_t id_map_intern(struct id_map *m, uint64_t key, int *fresh)
{
	uint32_t j;

	if (fresh)
		*fresh = 0;
	if (m->n >= (1u << 31) || ((m->n + 1) * 2 > m->cap && grow(m)))
		return -1;
	for (j = slot_of(key, m->cap); m->ids[j]; j = (j + 1) & (m->cap - 1))
		if (m->keys[j] == key)
			return m->ids[j] - 1;
	m->keys[j] = key;
	m->ids[j] = ++m->n;
	if (fresh)
		*fresh = 1;
	return m->n - 1;
}

void id_map_clear(struct id_map *m)
{
	if (m->cap)
		memset(m->ids, 0, m->cap * sizeof(*m->ids));
	m->n = 0;
}

void id_map_free(struct id_map *m)
{
	free(m->keys);
	free(m->ids);
	memset(m, 0, sizeof(*m));
}
