/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "device-info.h"
#include "job-request.h"
#include "json-codec.h"

#define OMIT JSON_FIELD_OMIT_UNSET

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
