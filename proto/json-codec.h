/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* A table-driven JSON codec for C structs: one row per wire field ({name, type, offset,
 * min, max, flags}) drives decoding, encoding, validating a struct built in C, freeing and
 * deep copying, so a field is declared once and every direction agrees on it.
 *
 * Rules the rows encode:
 *   - integers: [min, max] on the wire. With JSON_FIELD_OMIT_UNSET the value `unset` means
 *     "not given": it is not sent, and validate accepts it besides the range (so a wire
 *     minimum of 1 still lets 0 mean "the default" in C). JSON_FIELD_INFINITY: UINT64_MAX
 *     travels as the string "infinity".
 *   - strings: min..max bytes, no NUL inside, and `valid` if set; NULL is not sent.
 *   - string lists: at most max entries of at most item_max bytes, each passing `valid`;
 *     NULL is not sent (an empty list is).
 *   - objects: a nested table, whose unknown keys are ignored whatever the outer rule.
 *   - JSON_FIELD_PRESENT: a bool at present_offset says whether the field is sent, and is
 *     set when it is received.
 * A decoding error names the field's row (the top-level key, also for a bad entry inside
 * a list or nested object). */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum JsonFieldType {
        JSON_FIELD_U64,         /* uint64_t */
        JSON_FIELD_U32,         /* any 32-bit unsigned: unsigned, uint32_t, uid_t, mode_t */
        JSON_FIELD_INT,         /* int */
        JSON_FIELD_BOOL,        /* bool */
        JSON_FIELD_TRISTATE,    /* int: -1 (unset), 0, 1; a boolean on the wire */
        JSON_FIELD_DOUBLE,      /* double; an integer on the wire is taken too */
        JSON_FIELD_STRING,      /* char *, owned */
        JSON_FIELD_STRV,        /* char **, owned */
        JSON_FIELD_OBJECT,      /* an embedded struct described by .fields */
        JSON_FIELD_CUSTOM,      /* .ops does everything */
        _JSON_FIELD_TYPE_MAX,
} JsonFieldType;

typedef enum JsonFieldFlags {
        JSON_FIELD_OMIT_UNSET = 1 << 0,  /* integers, bools: `unset` is not sent */
        JSON_FIELD_INFINITY   = 1 << 1,  /* U64: UINT64_MAX <-> "infinity" */
        JSON_FIELD_REQUIRED   = 1 << 2,  /* decoding fails, naming it, when it is missing */
        JSON_FIELD_COMMAND    = 1 << 3,  /* STRV: an argv, at least one entry, the first non-empty */
        JSON_FIELD_PRESENT    = 1 << 4,  /* see present_offset */
        JSON_FIELD_DETAILS    = 1 << 5,  /* a group the caller may leave out when encoding */
        JSON_FIELD_LENIENT    = 1 << 6,  /* scalar rows: a bad value received is dropped, not an
                                          * error (display fields that must not fail the whole) */
} JsonFieldFlags;

typedef struct JsonField JsonField;

/* For JSON_FIELD_CUSTOM. obj is the whole struct, so a field may span several members
 * (a pointer and its count). */
typedef struct JsonFieldOps {
        int (*decode)(const JsonField *f, json_object *v, void *obj);          /* -EINVAL, -ENOMEM */
        int (*encode)(const JsonField *f, const void *obj, json_object **ret); /* *ret NULL: not sent */
        bool (*valid)(const JsonField *f, const void *obj);
        /* For fields that own memory: make the field empty without freeing (dst holds a
         * shallow copy), then copy it from src; and free it. */
        void (*forget)(const JsonField *f, void *obj);
        int (*copy)(const JsonField *f, const void *src, void *dst);
        void (*done)(const JsonField *f, void *obj);
} JsonFieldOps;

struct JsonField {
        const char *name;
        JsonFieldType type;
        size_t offset;
        int64_t min;                    /* integers: value; strings: length; lists: unused */
        uint64_t max;                   /* integers: value; strings: length; lists: entries */
        unsigned flags;                 /* JsonFieldFlags */
        int64_t unset;                  /* with JSON_FIELD_OMIT_UNSET */
        size_t item_max;                /* STRV: the length of one entry */
        bool (*valid)(const char *s);   /* STRING, STRV entries: a further rule */
        size_t present_offset;          /* with JSON_FIELD_PRESENT: a bool */
        const JsonField *fields;        /* OBJECT: its rows, ended by a row without name */
        const JsonFieldOps *ops;        /* CUSTOM */
};

/* The member's size, checked at compile time against what the row type stores. */
#define JSON_FIELD_OFFSET(type, member, size)                                              \
        (offsetof(type, member) + 0 * sizeof(char[sizeof(((type *) 0)->member) == (size) ? 1 : -1]))

/* Rows, one per wire key: JSON_U64(Struct, "key", member, min, max, flags, unset). */
#define JSON_U64(s, key, m, lo, hi, fl, u)                                                  \
        { .name = (key), .type = JSON_FIELD_U64, .offset = JSON_FIELD_OFFSET(s, m, sizeof(uint64_t)), \
          .min = (lo), .max = (hi), .flags = (fl), .unset = (u) }
#define JSON_U32(s, key, m, lo, hi, fl, u)                                                  \
        { .name = (key), .type = JSON_FIELD_U32, .offset = JSON_FIELD_OFFSET(s, m, sizeof(uint32_t)), \
          .min = (lo), .max = (hi), .flags = (fl), .unset = (u) }
#define JSON_INT(s, key, m, lo, hi, fl, u)                                                  \
        { .name = (key), .type = JSON_FIELD_INT, .offset = JSON_FIELD_OFFSET(s, m, sizeof(int)), \
          .min = (lo), .max = (hi), .flags = (fl), .unset = (u) }
#define JSON_BOOL(s, key, m, fl)                                                            \
        { .name = (key), .type = JSON_FIELD_BOOL, .offset = JSON_FIELD_OFFSET(s, m, sizeof(bool)), \
          .max = 1, .flags = (fl) }
#define JSON_TRISTATE(s, key, m, fl)                                                        \
        { .name = (key), .type = JSON_FIELD_TRISTATE, .offset = JSON_FIELD_OFFSET(s, m, sizeof(int)), \
          .min = -1, .max = 1, .flags = (fl), .unset = -1 }
#define JSON_DOUBLE(s, key, m, fl, present)                                                 \
        { .name = (key), .type = JSON_FIELD_DOUBLE, .offset = JSON_FIELD_OFFSET(s, m, sizeof(double)), \
          .flags = (fl) | JSON_FIELD_PRESENT, .present_offset = JSON_FIELD_OFFSET(s, present, sizeof(bool)) }
#define JSON_STRING(s, key, m, lo, hi, fl, ok)                                              \
        { .name = (key), .type = JSON_FIELD_STRING, .offset = JSON_FIELD_OFFSET(s, m, sizeof(char *)), \
          .min = (lo), .max = (hi), .flags = (fl), .valid = (ok) }
#define JSON_STRV(s, key, m, entries, len, fl, ok)                                          \
        { .name = (key), .type = JSON_FIELD_STRV, .offset = JSON_FIELD_OFFSET(s, m, sizeof(char **)), \
          .max = (entries), .item_max = (len), .flags = (fl), .valid = (ok) }
#define JSON_OBJECT(s, key, m, rows, fl)                                                    \
        { .name = (key), .type = JSON_FIELD_OBJECT, .offset = offsetof(s, m), .flags = (fl), .fields = (rows) }
/* min/max are the ops' business; set them when the ops read them from the row. */
#define JSON_CUSTOM(s, key, m, o, fl)                                                       \
        { .name = (key), .type = JSON_FIELD_CUSTOM, .offset = offsetof(s, m), .flags = (fl), .ops = (o) }
#define JSON_END {}

typedef enum JsonUnknownKeys {
        JSON_UNKNOWN_REFUSE,    /* a typo must not silently drop a limit */
        JSON_UNKNOWN_IGNORE,    /* a newer peer's field */
} JsonUnknownKeys;

/* Decodes the object o into obj, which holds its initial values. On -EINVAL *ret_bad_field
 * names the row, or an unknown key as sent (pointing into o). *ret_seen_flags (may be NULL)
 * gets the union of the flags of the rows that were present. On failure obj may hold part
 * of the result: the caller frees it with json_codec_done(). */
int json_codec_decode(const JsonField *fields, json_object *o, JsonUnknownKeys unknown, void *obj,
                      const char **ret_bad_field, unsigned *ret_seen_flags);
/* Rows with any flag in skip_flags are left out. */
int json_codec_encode(const JsonField *fields, const void *obj, unsigned skip_flags, json_object **ret);
/* The decoding rules, on a struct built in C: 0 or -EINVAL naming the first bad row. */
int json_codec_validate(const JsonField *fields, const void *obj, const char **ret_bad_field);
/* Frees what the rows own; the caller resets the struct. */
void json_codec_done(const JsonField *fields, void *obj);
/* dst holds a shallow copy of src (*dst = *src); replaces every owned member with a copy.
 * On -ENOMEM dst owns what was copied so far and nothing of src: json_codec_done() frees it. */
int json_codec_copy(const JsonField *fields, const void *src, void *dst);
