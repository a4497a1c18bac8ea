/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "devices-mig.h"
#include "fd-util.h"
#include "parse-util.h"

#define ACCESS_MAX 4096
#define MIG_MINORS_MAX (1024 * 1024) /* the driver's table: 8 GPUs x 8 GIs x 9 lines, ~40 KB */
#define MIG_IDS_MAX 64               /* GI and CI ids are below 8 today; anything past is not a driver's */

/* The number at v, up to a blank or the line's end. */
static int minor_at(const char *v, unsigned *ret) {
        char num[16];
        size_t n;

        v += strspn(v, " \t");
        n = strcspn(v, " \t\n");
        if (n == 0 || n >= sizeof num)
                return -EBADMSG;
        memcpy(num, v, n);
        num[n] = '\0';
        return safe_atou(num, ret) < 0 ? -EBADMSG : 0;
}

/* "DeviceFileMinor: 12" in a capability's access file. */
static int access_minor(int procfs_fd, const char *path, unsigned *ret) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = read_file_at(procfs_fd, path, ACCESS_MAX, &text, NULL);
        if (r < 0)
                return r;
        for (const char *p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
                if (strncmp(p, "DeviceFileMinor:", 16) == 0)
                        return minor_at(p + 16, ret);
        return -EBADMSG;
}

/* The same from the driver's table of every minor it may hand out ("KEY MINOR" lines). */
static int table_minor(const char *table, const char *key, unsigned *ret) {
        size_t k = strlen(key);

        for (const char *p = table; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
                if (strncmp(p, key, k) == 0 && (p[k] == ' ' || p[k] == '\t'))
                        return minor_at(p + k, ret);
        return -ENOENT;
}

static int cap_minor(int procfs_fd, const char *table, unsigned gpu, unsigned gi, int ci, unsigned *ret) {
        _cleanup_free_ char *path = NULL, *key = NULL;
        int r;

        if ((ci < 0 ? asprintf(&path, "driver/nvidia/capabilities/gpu%u/mig/gi%u/access", gpu, gi)
                    : asprintf(&path, "driver/nvidia/capabilities/gpu%u/mig/gi%u/ci%d/access", gpu, gi, ci)) < 0)
                return -ENOMEM;
        r = access_minor(procfs_fd, path, ret);
        if (r != -ENOENT || !table)
                return r;
        if ((ci < 0 ? asprintf(&key, "gpu%u/gi%u/access", gpu, gi) : asprintf(&key, "gpu%u/gi%u/ci%d/access", gpu, gi, ci)) < 0)
                return -ENOMEM;
        return table_minor(table, key, ret);
}

/* "gi3" -> 3; -EINVAL for anything else. */
static int id_of(const char *name, const char *prefix, unsigned *ret) {
        size_t n = strlen(prefix);
        unsigned v;

        if (strncmp(name, prefix, n) != 0 || !name[n] || strspn(name + n, "0123456789") != strlen(name + n) ||
            safe_atou(name + n, &v) < 0 || v >= MIG_IDS_MAX)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int add_one(DeviceSet *s, size_t parent, unsigned gi, unsigned ci, unsigned gi_minor, unsigned ci_minor) {
        const Device *p = &s->devices[parent];
        const char *key = p->uuid ?: p->pci_address;
        Device d = {
                .vendor = DEVICE_VENDOR_NVIDIA,
                .numa_node = p->numa_node,
                .ordinal = p->ordinal,
                .mig = true,
                .mig_gi = gi,
                .mig_ci = ci,
        };
        int r = -ENOMEM;

        if (!(d.mig_parent = strdup(key)) || (p->model && !(d.model = strdup(p->model))) ||
            asprintf(&d.uuid, "MIG-%s/%u/%u", key, gi, ci) < 0 || strv_extend(&d.nodes, p->nodes[0]) < 0 ||
            strv_extendf(&d.nodes, "/dev/nvidia-caps/nvidia-cap%u", gi_minor) < 0 ||
            strv_extendf(&d.nodes, "/dev/nvidia-caps/nvidia-cap%u", ci_minor) < 0)
                goto fail;
        r = device_set_add(s, &d);
        if (r == -E2BIG) {
                if (strv_extendf(&s->unscheduled, "MIG device %u/%u of %s: more than %d devices, it is given to nobody",
                                 gi, ci, key, 64) < 0)
                        return -ENOMEM;
                return 0;
        }
        return r < 0 ? r : 1;
fail:
        device_done(&d);
        return r;
}

static int discover_gpu(int procfs_fd, const char *table, DeviceSet *s, size_t parent) {
        _cleanup_closedir_ DIR *gis = NULL;
        _cleanup_free_ char *dir = NULL;
        unsigned gpu = s->devices[parent].ordinal, found = 0;
        int r;

        if (asprintf(&dir, "driver/nvidia/capabilities/gpu%u/mig", gpu) < 0)
                return -ENOMEM;
        r = opendir_at(procfs_fd, dir, 0, &gis);
        if (r < 0)
                return r == -ENOMEM ? r : 0; /* not in MIG mode, or a driver without it */
        for (struct dirent *g; (g = readdir(gis));) {
                _cleanup_closedir_ DIR *cis = NULL;
                _cleanup_free_ char *sub = NULL;
                unsigned gi, gi_minor;

                if (id_of(g->d_name, "gi", &gi) < 0)
                        continue;
                if (cap_minor(procfs_fd, table, gpu, gi, -1, &gi_minor) < 0)
                        continue; /* broken or going away: a layout being changed */
                if (asprintf(&sub, "%s/gi%u", dir, gi) < 0)
                        return -ENOMEM;
                if (opendir_at(procfs_fd, sub, 0, &cis) < 0)
                        continue;
                for (struct dirent *c; (c = readdir(cis));) {
                        unsigned ci, ci_minor;

                        if (id_of(c->d_name, "ci", &ci) < 0 || cap_minor(procfs_fd, table, gpu, gi, (int) ci, &ci_minor) < 0)
                                continue;
                        r = add_one(s, parent, gi, ci, gi_minor, ci_minor);
                        if (r < 0)
                                return r;
                        found += r > 0;
                }
        }
        if (found > 0)
                s->devices[parent].mig_mode = true;
        return 0;
}

int devices_discover_mig(int procfs_fd, DeviceSet *s) {
        _cleanup_free_ char *table = NULL;
        size_t n = s->n_devices;
        int r;

        r = read_file_at(procfs_fd, "driver/nvidia-caps/mig-minors", MIG_MINORS_MAX, &table, NULL);
        if (r == -ENOMEM)
                return r;
        for (size_t i = 0; i < n; i++) {
                const Device *p = &s->devices[i];

                if (p->vendor != DEVICE_VENDOR_NVIDIA || p->mig || !p->nodes || !p->nodes[0] || (!p->uuid && !p->pci_address))
                        continue;
                r = discover_gpu(procfs_fd, table, s, i);
                if (r < 0)
                        return r;
        }
        return s->n_devices > n ? device_set_sort(s) : 0;
}

static int set_string(char **field, const char *value, bool *changed) {
        if (!value || !*value || (*field && strcmp(*field, value) == 0))
                return 0;
        char *c = strdup(value);
        if (!c)
                return -ENOMEM;
        free(*field);
        *field = c;
        *changed = true;
        return 0;
}

int devices_mig_update(Device *d, const char *uuid, const char *profile, uint64_t memory) {
        bool changed = false, features = false;
        int r;

        if (!d->mig)
                return 0;
        if ((r = set_string(&d->mig_uuid, uuid, &changed)) < 0 || (r = set_string(&d->mig_profile, profile, &features)) < 0)
                return r;
        if (memory > 0 && memory != d->memory) {
                d->memory = memory;
                changed = true;
        }
        if (features && (r = device_derive_features(d)) < 0)
                return r;
        return changed || features;
}

void device_compute_share(const Device *d, unsigned *ret_slices, unsigned *ret_total) {
        unsigned slices = 0, total = 7;
        _cleanup_free_ char *token = NULL;
        int n = 0;

        *ret_slices = *ret_total = 1;
        /* "1g.10gb", or a compute instance smaller than its GPU instance: "1c.3g.40gb". */
        if (!d->mig || !d->mig_profile ||
            ((sscanf(d->mig_profile, "%ug.%n", &slices, &n) != 1 || n == 0) &&
             (n = 0, sscanf(d->mig_profile, "%uc.%n", &slices, &n) != 1 || n == 0)) ||
            slices == 0)
                return;
        /* The A30 has 4 compute slices; the A100, H100, H200 and B200 7. */
        token = device_model_token(d->model);
        if (token && strcmp(token, "a30") == 0)
                total = 4;
        if (slices > total)
                return;
        *ret_slices = slices;
        *ret_total = total;
}

const char *device_mig_cuda_id(const Device *d) {
        /* Only NVML's: the older "MIG-GPU-.../G/C" form is refused by drivers from R470, and
         * which one a driver takes is known only through NVML. */
        return d->mig ? d->mig_uuid : NULL;
}
