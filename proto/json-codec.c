/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json-codec.h"
#include "json-util.h"
#include "macro.h"
#include "strv.h"

#define FIELD_PTR(obj, f) ((void *) ((uint8_t *) (obj) + (f)->offset))
#define FIELD_CPTR(obj, f) ((const void *) ((const uint8_t *) (obj) + (f)->offset))

static const JsonField *field_find(const JsonField *fields, const char *name) {
        for (const JsonField *f = fields; f->name; f++)
                if (streq(f->name, name))
                        return f;
        return NULL;
}

/* Integers as one signed/unsigned pair, so the range checks are written once. */
static uint64_t field_get_u(const JsonField *f, const void *obj) {
        const void *p = FIELD_CPTR(obj, f);

        return f->type == JSON_FIELD_U64 ? *(const uint64_t *) p : *(const uint32_t *) p;
}

static int64_t field_get_i(const JsonField *f, const void *obj) {
        const void *p = FIELD_CPTR(obj, f);

        return f->type == JSON_FIELD_BOOL ? *(const bool *) p : *(const int *) p;
}

static bool strv_valid(const JsonField *f, char *const *l) {
        if (!l)
                return true;
        if (strv_length(l) > f->max)
                return false;
        if ((f->flags & JSON_FIELD_COMMAND) && isempty(l[0]))
                return false;
        STRV_FOREACH(s, l)
                if (strlen(*s) > f->item_max || (f->valid && !f->valid(*s)))
                        return false;
        return true;
}

static int field_decode(const JsonField *f, json_object *v, void *obj) {
        void *p = FIELD_PTR(obj, f);
        uint64_t u;
        int64_t i;
        bool b;
        int r;

        switch (f->type) {
        case JSON_FIELD_U64:
        case JSON_FIELD_U32:
                if ((f->flags & JSON_FIELD_INFINITY) && json_object_is_type(v, json_type_string)) {
                        const char *s;

                        if (json_get_string(v, 0, 16, &s) < 0 || !streq(s, "infinity"))
                                return -EINVAL;
                        u = UINT64_MAX;
                } else {
                        r = json_get_u64(v, (uint64_t) f->min, f->max, &u);
                        if (r < 0)
                                return r;
                }
                if (f->type == JSON_FIELD_U64)
                        *(uint64_t *) p = u;
                else
                        *(uint32_t *) p = (uint32_t) u;
                return 0;

        case JSON_FIELD_INT:
                r = json_get_i64(v, f->min, (int64_t) f->max, &i);
                if (r < 0)
                        return r;
                *(int *) p = (int) i;
                return 0;

        case JSON_FIELD_BOOL:
        case JSON_FIELD_TRISTATE:
                r = json_get_bool(v, &b);
                if (r < 0)
                        return r;
                if (f->type == JSON_FIELD_BOOL)
                        *(bool *) p = b;
                else
                        *(int *) p = b;
                return 0;

        case JSON_FIELD_DOUBLE:
                if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
                        return -EINVAL;
                *(double *) p = json_object_get_double(v);
                return 0;

        case JSON_FIELD_STRING: {
                char **s = p;

                *s = mfree(*s);
                r = json_dup_string(v, (size_t) f->min, f->max, s);
                if (r < 0)
                        return r;
                return !f->valid || f->valid(*s) ? 0 : -EINVAL;
        }

        case JSON_FIELD_STRV: {
                char ***l = p;

                *l = strv_free(*l);
                r = json_get_strv(v, f->max, f->item_max, l);
                if (r < 0)
                        return r;
                return strv_valid(f, *l) ? 0 : -EINVAL;
        }

        case JSON_FIELD_OBJECT:
                if (!json_object_is_type(v, json_type_object))
                        return -EINVAL;
                return json_codec_decode(f->fields, v, JSON_UNKNOWN_IGNORE, p, NULL, NULL);

        case JSON_FIELD_CUSTOM:
                return f->ops->decode(f, v, obj);

        default:
                abort(); /* a row with a type this file does not know */
        }
}

int json_codec_decode(const JsonField *fields, json_object *o, JsonUnknownKeys unknown, void *obj,
                      const char **ret_bad_field, unsigned *ret_seen_flags) {
        unsigned seen = 0;
        int r;

        assert(fields);
        assert(obj);

        if (!json_object_is_type(o, json_type_object))
                return -EINVAL;

        json_object_object_foreach(o, key, v) {
                const JsonField *f = field_find(fields, key);

                if (!f) {
                        if (unknown == JSON_UNKNOWN_IGNORE)
                                continue;
                        /* Named as sent: points into o, which the caller holds for as long
                         * as it needs the answer. */
                        if (ret_bad_field)
                                *ret_bad_field = key;
                        return -EINVAL;
                }
                r = field_decode(f, v, obj);
                if (r == -ENOMEM)
                        return r;
                if (r < 0 && (f->flags & JSON_FIELD_LENIENT))
                        continue;       /* the scalar rows write nothing on failure */
                if (r < 0) {
                        if (ret_bad_field)
                                *ret_bad_field = f->name;
                        return -EINVAL;
                }
                if ((f->flags & JSON_FIELD_PRESENT))
                        *(bool *) ((uint8_t *) obj + f->present_offset) = true;
                seen |= f->flags;
        }

        for (const JsonField *f = fields; f->name; f++)
                if ((f->flags & JSON_FIELD_REQUIRED) && !json_object_object_get_ex(o, f->name, NULL)) {
                        if (ret_bad_field)
                                *ret_bad_field = f->name;
                        return -EINVAL;
                }

        if (ret_seen_flags)
                *ret_seen_flags = seen;
        return 0;
}

static int field_encode(const JsonField *f, const void *obj, json_object **ret) {
        const void *p = FIELD_CPTR(obj, f);

        *ret = NULL;
        if ((f->flags & JSON_FIELD_PRESENT) && !*(const bool *) ((const uint8_t *) obj + f->present_offset))
                return 0;

        switch (f->type) {
        case JSON_FIELD_U64:
        case JSON_FIELD_U32: {
                uint64_t u = field_get_u(f, obj);

                if ((f->flags & JSON_FIELD_INFINITY) && u == UINT64_MAX)
                        *ret = json_object_new_string("infinity");
                else if ((f->flags & JSON_FIELD_OMIT_UNSET) && u == (uint64_t) f->unset)
                        return 0;
                else
                        *ret = json_object_new_uint64(u);
                break;
        }
        case JSON_FIELD_INT:
        case JSON_FIELD_BOOL:
        case JSON_FIELD_TRISTATE: {
                int64_t i = field_get_i(f, obj);

                if ((f->flags & JSON_FIELD_OMIT_UNSET) && i == f->unset)
                        return 0;
                *ret = f->type == JSON_FIELD_INT ? json_object_new_int64(i) : json_object_new_boolean(i > 0);
                break;
        }
        case JSON_FIELD_DOUBLE:
                *ret = json_object_new_double(*(const double *) p);
                break;

        case JSON_FIELD_STRING:
                if (!*(char *const *) p)
                        return 0;
                *ret = json_object_new_string(*(char *const *) p);
                break;

        case JSON_FIELD_STRV:
                if (!*(char **const *) p)
                        return 0;
                *ret = json_new_strv(*(char **const *) p);
                break;

        case JSON_FIELD_OBJECT:
                return json_codec_encode(f->fields, p, 0, ret);

        case JSON_FIELD_CUSTOM:
                return f->ops->encode(f, obj, ret);

        default:
                abort(); /* a row with a type this file does not know */
        }
        return *ret ? 0 : -ENOMEM;
}

int json_codec_encode(const JsonField *fields, const void *obj, unsigned skip_flags, json_object **ret) {
        _cleanup_json_ json_object *o = NULL;
        int r;

        assert(fields);
        assert(obj);
        assert(ret);

        o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        for (const JsonField *f = fields; f->name; f++) {
                json_object *v;

                if (f->flags & skip_flags)
                        continue;
                r = field_encode(f, obj, &v);
                if (r < 0)
                        return r;
                if (!v)
                        continue;
                r = json_add(o, f->name, v);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(o);
        return 0;
}

static bool field_valid(const JsonField *f, const void *obj) {
        const void *p = FIELD_CPTR(obj, f);

        switch (f->type) {
        case JSON_FIELD_U64:
        case JSON_FIELD_U32: {
                uint64_t u = field_get_u(f, obj);

                return ((f->flags & JSON_FIELD_OMIT_UNSET) && u == (uint64_t) f->unset) ||
                       ((f->flags & JSON_FIELD_INFINITY) && u == UINT64_MAX) ||
                       (u >= (uint64_t) f->min && u <= f->max);
        }
        case JSON_FIELD_INT:
        case JSON_FIELD_TRISTATE: {
                int64_t i = field_get_i(f, obj);

                if ((f->flags & JSON_FIELD_OMIT_UNSET) && i == f->unset)
                        return true;
                if (f->type == JSON_FIELD_TRISTATE)
                        return i == 0 || i == 1;
                return i >= f->min && i <= (int64_t) f->max;
        }
        case JSON_FIELD_BOOL:
        case JSON_FIELD_DOUBLE:
                return true;

        case JSON_FIELD_STRING: {
                const char *s = *(char *const *) p;
                size_t n;

                if (!s)
                        return true;
                n = strlen(s);
                return n >= (size_t) f->min && n <= f->max && (!f->valid || f->valid(s));
        }
        case JSON_FIELD_STRV:
                return strv_valid(f, *(char **const *) p);

        case JSON_FIELD_OBJECT:
                return json_codec_validate(f->fields, p, NULL) >= 0;

        case JSON_FIELD_CUSTOM:
                return f->ops->valid(f, obj);

        default:
                abort(); /* a row with a type this file does not know */
        }
}

int json_codec_validate(const JsonField *fields, const void *obj, const char **ret_bad_field) {
        assert(fields);
        assert(obj);

        for (const JsonField *f = fields; f->name; f++)
                if (!field_valid(f, obj)) {
                        if (ret_bad_field)
                                *ret_bad_field = f->name;
                        return -EINVAL;
                }
        return 0;
}

void json_codec_done(const JsonField *fields, void *obj) {
        if (!obj)
                return;
        for (const JsonField *f = fields; f->name; f++) {
                void *p = FIELD_PTR(obj, f);

                if (f->type == JSON_FIELD_STRING)
                        *(char **) p = mfree(*(char **) p);
                else if (f->type == JSON_FIELD_STRV)
                        *(char ***) p = strv_free(*(char ***) p);
                else if (f->type == JSON_FIELD_OBJECT)
                        json_codec_done(f->fields, p);
                else if (f->type == JSON_FIELD_CUSTOM && f->ops->done)
                        f->ops->done(f, obj);
        }
}

static void codec_forget(const JsonField *fields, void *obj) {
        for (const JsonField *f = fields; f->name; f++) {
                void *p = FIELD_PTR(obj, f);

                if (f->type == JSON_FIELD_STRING || f->type == JSON_FIELD_STRV)
                        *(void **) p = NULL;
                else if (f->type == JSON_FIELD_OBJECT)
                        codec_forget(f->fields, p);
                else if (f->type == JSON_FIELD_CUSTOM && f->ops->forget)
                        f->ops->forget(f, obj);
        }
}

static int codec_copy_owned(const JsonField *fields, const void *src, void *dst) {
        int r;

        for (const JsonField *f = fields; f->name; f++) {
                const void *s = FIELD_CPTR(src, f);
                void *d = FIELD_PTR(dst, f);

                switch (f->type) {
                case JSON_FIELD_STRING:
                        if (*(char *const *) s && !(*(char **) d = strdup(*(char *const *) s)))
                                return -ENOMEM;
                        break;
                case JSON_FIELD_STRV:
                        if (*(char **const *) s && !(*(char ***) d = strv_copy(*(char **const *) s)))
                                return -ENOMEM;
                        break;
                case JSON_FIELD_OBJECT:
                        r = codec_copy_owned(f->fields, s, d);
                        if (r < 0)
                                return r;
                        break;
                case JSON_FIELD_CUSTOM:
                        if (f->ops->copy) {
                                r = f->ops->copy(f, src, dst);
                                if (r < 0)
                                        return r;
                        }
                        break;
                default:
                        break;
                }
        }
        return 0;
}

int json_codec_copy(const JsonField *fields, const void *src, void *dst) {
        assert(fields);
        assert(src);
        assert(dst);

        /* Two passes, so that on failure dst never shares a pointer with src. */
        codec_forget(fields, dst);
        return codec_copy_owned(fields, src, dst);
}
