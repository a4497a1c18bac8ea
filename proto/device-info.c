/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "device-info.h"
#include "job-request.h"
#include "json-codec.h"
#include "json-util.h"

#define OMIT JSON_FIELD_OMIT_UNSET

/* Wire: "shard_holders": [{"job_id", "user", "shards"}], at most CORRAL_SHARDS_MAX. */
/* The field is the pair (shard_holders, n_shard_holders): its ops take the DeviceInfo. */
#define HOLDERS(obj, f) ((DeviceInfo *) (obj))
#define HOLDERS_CONST(obj, f) ((const DeviceInfo *) (obj))

static void holders_done(const JsonField *f, void *obj) {
        DeviceInfo *d = HOLDERS(obj, f);

        for (size_t i = 0; i < d->n_shard_holders; i++)
                free(d->shard_holders[i].user);
        d->shard_holders = mfree(d->shard_holders);
        d->n_shard_holders = 0;
}

static int holders_add(DeviceInfo *d, uint64_t job_id, const char *user, uint32_t shards) {
        DeviceShardHolder *n;
        char *u = NULL;

        if (d->n_shard_holders >= CORRAL_SHARDS_MAX)
                return -EINVAL;
        if (user && !(u = strdup(user)))
                return -ENOMEM;
        n = reallocarray(d->shard_holders, d->n_shard_holders + 1, sizeof(DeviceShardHolder));
        if (!n) {
                free(u);
                return -ENOMEM;
        }
        d->shard_holders = n;
        n[d->n_shard_holders++] = (DeviceShardHolder) { .job_id = job_id, .user = u, .shards = shards };
        return 0;
}

static int holders_decode(const JsonField *f, json_object *a, void *obj) {
        DeviceInfo *d = HOLDERS(obj, f);
        size_t n;
        int r;

        holders_done(f, obj);
        if (!json_object_is_type(a, json_type_array) || (n = json_object_array_length(a)) > CORRAL_SHARDS_MAX)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_array_get_idx(a, i), *v;
                const char *user = NULL;
                uint64_t id, k;

                if (!json_object_is_type(e, json_type_object) || !json_object_object_get_ex(e, "job_id", &v) ||
                    json_get_u64(v, 1, CORRAL_JOB_ID_MAX, &id) < 0 || !json_object_object_get_ex(e, "shards", &v) ||
                    json_get_u64(v, 1, CORRAL_SHARDS_MAX, &k) < 0 ||
                    (json_object_object_get_ex(e, "user", &v) && json_get_string(v, 0, 256, &user) < 0))
                        return -EINVAL;
                r = holders_add(d, id, user, (uint32_t) k);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int holders_encode(const JsonField *f, const void *obj, json_object **ret) {
        const DeviceInfo *d = HOLDERS_CONST(obj, f);
        _cleanup_json_ json_object *a = NULL;

        for (size_t i = 0; i < d->n_shard_holders; i++) {
                _cleanup_json_ json_object *e = json_object_new_object();

                if ((!a && !(a = json_object_new_array())) || !e ||
                    json_add_u64(e, "job_id", d->shard_holders[i].job_id) < 0 ||
                    json_add_string(e, "user", d->shard_holders[i].user) < 0 ||
                    json_add_u64(e, "shards", d->shard_holders[i].shards) < 0 || json_object_array_add(a, e) < 0)
                        return -ENOMEM;
                TAKE_PTR(e);
        }
        *ret = TAKE_PTR(a);
        return 0;
}

static bool holders_valid(const JsonField *f, const void *obj) {
        const DeviceInfo *d = HOLDERS_CONST(obj, f);

        if (d->n_shard_holders > CORRAL_SHARDS_MAX)
                return false;
        for (size_t i = 0; i < d->n_shard_holders; i++)
                if (d->shard_holders[i].job_id == 0 || d->shard_holders[i].shards == 0 ||
                    d->shard_holders[i].shards > CORRAL_SHARDS_MAX ||
                    (d->shard_holders[i].user && strlen(d->shard_holders[i].user) > 256))
                        return false;
        return true;
}

static void holders_forget(const JsonField *f, void *obj) {
        DeviceInfo *d = HOLDERS(obj, f);

        d->shard_holders = NULL;
        d->n_shard_holders = 0;
}

static int holders_copy(const JsonField *f, const void *src, void *dst) {
        const DeviceInfo *s = HOLDERS_CONST(src, f);

        for (size_t i = 0; i < s->n_shard_holders; i++) {
                int r = holders_add(HOLDERS(dst, f), s->shard_holders[i].job_id, s->shard_holders[i].user,
                                    s->shard_holders[i].shards);
                if (r < 0)
                        return r;
        }
        return 0;
}

static const JsonFieldOps holders_ops = {
        .decode = holders_decode,
        .encode = holders_encode,
        .valid = holders_valid,
        .forget = holders_forget,
        .copy = holders_copy,
        .done = holders_done,
};

static const JsonField device_info_fields[] = {
        JSON_U32(DeviceInfo, "index", index, 0, CORRAL_DEVICES_MAX - 1, 0, 0),
        JSON_STRING(DeviceInfo, "name", name, 1, 64, JSON_FIELD_REQUIRED, NULL),
        JSON_STRING(DeviceInfo, "vendor", vendor, 1, 16, 0, NULL),
        JSON_STRING(DeviceInfo, "model", model, 0, 256, 0, NULL),
        JSON_STRING(DeviceInfo, "pci_address", pci_address, 0, 64, 0, NULL),
        JSON_STRING(DeviceInfo, "uuid", uuid, 0, 64, 0, NULL),
        JSON_STRING(DeviceInfo, "offline", offline, 0, 256, 0, NULL),
        JSON_INT(DeviceInfo, "numa_node", numa_node, -1, 4095, OMIT, -1),
        JSON_STRV(DeviceInfo, "features", features, 64, 64, 0, NULL),
        JSON_U64(DeviceInfo, "job_id", job_id, 1, CORRAL_JOB_ID_MAX, OMIT, 0),
        JSON_STRING(DeviceInfo, "user", user, 0, 256, 0, NULL),
        JSON_U32(DeviceInfo, "shards", shards, 0, CORRAL_SHARDS_MAX, OMIT, 0),
        JSON_U32(DeviceInfo, "shards_used", shards_used, 0, UINT32_MAX, OMIT, 0),
        JSON_CUSTOM(DeviceInfo, "shard_holders", shard_holders, &holders_ops, 0),
        JSON_BOOL(DeviceInfo, "mig_mode", mig_mode, OMIT),
        JSON_STRING(DeviceInfo, "mig_of", mig_of, 1, 64, 0, NULL),
        JSON_U32(DeviceInfo, "mig_gi", mig_gi, 0, 63, OMIT, 0),
        JSON_U32(DeviceInfo, "mig_ci", mig_ci, 0, 63, OMIT, 0),
        JSON_STRING(DeviceInfo, "mig_profile", mig_profile, 1, 32, 0, NULL),
        JSON_STRING(DeviceInfo, "mig_uuid", mig_uuid, 1, 96, 0, NULL),
        JSON_U64(DeviceInfo, "memory", memory, 0, UINT64_C(1) << 50, OMIT, 0),
        JSON_END,
};

void device_info_done(DeviceInfo *d) {
        if (!d)
                return;
        json_codec_done(device_info_fields, d);
        *d = (DeviceInfo) DEVICE_INFO_INIT;
}

DeviceInfo *device_info_array_free(DeviceInfo *a, size_t n) {
        for (size_t i = 0; a && i < n; i++)
                device_info_done(&a[i]);
        free(a);
        return NULL;
}

int device_info_to_json(const DeviceInfo *d, json_object **ret) {
        const char *bad;

        /* What the daemon sends must be what a client accepts. */
        if (json_codec_validate(device_info_fields, d, &bad) < 0)
                return -EINVAL;
        return json_codec_encode(device_info_fields, d, 0, ret);
}

int device_info_array_from_json(json_object *array, DeviceInfo **ret, size_t *ret_n, const char **ret_bad_field) {
        DeviceInfo *a = NULL;
        size_t n;
        int r;

        *ret = NULL;
        *ret_n = 0;
        if (!array)
                return 0;
        if (!json_object_is_type(array, json_type_array) ||
            (n = json_object_array_length(array)) > CORRAL_DEVICES_MAX) {
                if (ret_bad_field)
                        *ret_bad_field = "devices";
                return -EINVAL;
        }
        if (n == 0)
                return 0;
        a = calloc(n, sizeof(DeviceInfo));
        if (!a)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                a[i] = (DeviceInfo) DEVICE_INFO_INIT;
        for (size_t i = 0; i < n; i++) {
                json_object *o = json_object_array_get_idx(array, i);

                if (!json_object_is_type(o, json_type_object)) {
                        if (ret_bad_field)
                                *ret_bad_field = "devices";
                        device_info_array_free(a, n);
                        return -EINVAL;
                }
                /* Unknown keys: a newer daemon's fields. */
                r = json_codec_decode(device_info_fields, o, JSON_UNKNOWN_IGNORE, &a[i], ret_bad_field, NULL);
                if (r < 0) {
                        device_info_array_free(a, n);
                        return r;
                }
        }
        *ret = a;
        *ret_n = n;
        return 0;
}

char *device_model_type_name(const char *model, char *buf, size_t size) {
        size_t k = 0;

        if (size == 0)
                return buf;
        for (const char *p = model; p && *p && k + 1 < size; p++)
                buf[k++] = isspace((unsigned char) *p) ? '_' : (char) tolower((unsigned char) *p);
        buf[model && strlen(model) < size ? k : 0] = '\0';
        return buf;
}
