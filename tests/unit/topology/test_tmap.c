/*
 * test_tmap.c - the slot index of lib/topology: keys found after the
 * table grew (through the caller's rehash), every key on one hash
 * (probing past each other and past removed cells), removal, and
 * re-insertion into a removed cell.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "tmain.h"
#include "tmap.h"

#define NKEYS 300

struct keys {
	char name[NKEYS][16];
	const char *want; /* the key tmap_find() looks for */
	int one_hash;	  /* every key hashes to 7 */
};

static uint64_t
keys_hash(const struct keys *k, const char *s)
{
	return k->one_hash ? 7 : tmap_str(s);
}

static bool
keys_eq(const void *arg, uint32_t slot)
{
	const struct keys *k = arg;

	return strcmp(k->name[slot], k->want) == 0;
}

static uint64_t
keys_rehash(const void *arg, uint32_t slot)
{
	const struct keys *k = arg;

	return keys_hash(k, k->name[slot]);
}

static uint32_t
keys_find(const struct tmap *m, struct keys *k, const char *s)
{
	k->want = s;
	return tmap_find(m, keys_hash(k, s), keys_eq, k);
}

/* Inserts every key, removes the odd slots, checks, inserts them again. */
static void
keys_exercise(struct keys *k)
{
	struct tmap m = {0};

	for (uint32_t i = 0; i < NKEYS; i++)
		snprintf(k->name[i], sizeof(k->name[i]), "node-%u", i);
	ck_assert_uint_eq(keys_find(&m, k, "node-0"), TMAP_EMPTY);
	for (uint32_t i = 0; i < NKEYS; i++)
		ck_assert_int_eq(tmap_insert(&m, keys_hash(k, k->name[i]), i,
					     keys_rehash, k),
				 0);
	ck_assert_uint_eq(m.live, NKEYS);
	ck_assert_uint_ge(m.cap, NKEYS);
	for (uint32_t i = 0; i < NKEYS; i++)
		ck_assert_uint_eq(keys_find(&m, k, k->name[i]), i);
	ck_assert_uint_eq(keys_find(&m, k, "node-x"), TMAP_EMPTY);
	for (uint32_t i = 1; i < NKEYS; i += 2)
		ck_assert_int_eq(tmap_remove(&m, keys_hash(k, k->name[i]), i),
				 0);
	ck_assert_int_eq(tmap_remove(&m, keys_hash(k, k->name[1]), 1), -1);
	ck_assert_uint_eq(m.live, NKEYS / 2);
	for (uint32_t i = 0; i < NKEYS; i++)
		ck_assert_uint_eq(keys_find(&m, k, k->name[i]),
				  i % 2 ? TMAP_EMPTY : i);
	for (uint32_t i = 1; i < NKEYS; i += 2)
		ck_assert_int_eq(tmap_insert(&m, keys_hash(k, k->name[i]), i,
					     keys_rehash, k),
				 0);
	for (uint32_t i = 0; i < NKEYS; i++)
		ck_assert_uint_eq(keys_find(&m, k, k->name[i]), i);
	tmap_free(&m);
	ck_assert_uint_eq(m.live, 0);
}

START_TEST(test_spread)
{
	static struct keys k;

	k.one_hash = 0;
	keys_exercise(&k);
	ck_assert_uint_ne(tmap_str("a"), tmap_str("b"));
	ck_assert_uint_eq(tmap_str("node-1"), tmap_str("node-1"));
}
END_TEST

START_TEST(test_one_hash)
{
	static struct keys k;

	k.one_hash = 1;
	keys_exercise(&k);
}
END_TEST

TMAIN("topology-tmap", test_spread, test_one_hash)
