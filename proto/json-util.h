/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Strict typed getters over json-c, shared by the codecs. Each returns 0, or -EINVAL when
 * the value has the wrong type, is out of range, or (strings) contains a NUL byte or is
 * longer than max. json-c clamps integers that overflow 64 bits instead of failing, so
 * every integer range here stays below INT64_MAX and a clamped value always fails. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "macro.h"

DEFINE_TRIVIAL_CLEANUP_FUNC_VOID(json_object *, json_object_put);
#define _cleanup_json_ _cleanup_(json_object_putp)

static inline json_tokener *json_tokener_freep_helper(json_tokener *t) {
        json_tokener_free(t);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(json_tokener *, json_tokener_freep_helper);
#define _cleanup_json_tokener_ _cleanup_(json_tokener_freep_helperp)

/* *ret points into o (no copy); empty strings are allowed unless min_len > 0. */
int json_get_string(json_object *o, size_t min_len, size_t max_len, const char **ret);
int json_dup_string(json_object *o, size_t min_len, size_t max_len, char **ret);
int json_get_u64(json_object *o, uint64_t min, uint64_t max, uint64_t *ret);
int json_get_i64(json_object *o, int64_t min, int64_t max, int64_t *ret);
int json_get_bool(json_object *o, bool *ret);
/* An array of at most max_entries strings, each within max_len. */
int json_get_strv(json_object *o, size_t max_entries, size_t max_len, char ***ret);

/* Parses exactly one JSON value from text[0..len): trailing bytes other than whitespace,
 * and truncated input, fail with -EBADMSG. */
int json_parse_strict(const char *text, size_t len, json_object **ret);

/* Adds key -> value to o; value may be NULL (then nothing is added, and -ENOMEM is
 * returned because NULL here means an allocation failed upstream). Takes the reference. */
int json_add(json_object *o, const char *key, json_object *value);
int json_add_string(json_object *o, const char *key, const char *s); /* NULL s: nothing */
int json_add_u64(json_object *o, const char *key, uint64_t v);
int json_add_i64(json_object *o, const char *key, int64_t v);
int json_add_bool(json_object *o, const char *key, bool b);
int json_add_strv(json_object *o, const char *key, char *const *l); /* NULL l: nothing */
/* Appends a string formatted as printf does (cut at 511 bytes) to the array a. */
int json_array_add_printf(json_object *a, const char *fmt, ...) _printf_(2, 3);
/* A new array of the strings in l (which may be NULL: an empty array); NULL on -ENOMEM. */
json_object *json_new_strv(char *const *l);
