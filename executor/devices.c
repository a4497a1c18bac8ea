/* SPDX-License-Identifier: GPL-2.0-or-later */
/* GPU discovery below given roots, the [Device] declarations applied over it, and the
 * device fence's base list. Formats, as the drivers write them:
 *
 * NVIDIA's procfs information file (kernel-open/nvidia/nv-procfs.c, nv_procfs_read_gpu_info):
 *     Model: \t\t NVIDIA A100-SXM4-40GB
 *     IRQ:   \t\t 150
 *     GPU UUID: \t GPU-5e7c9a3c-...
 *     Video BIOS: \t 92.00.25.00.08
 *     Bus Type: \t PCIe
 *     DMA Size: \t 47 bits
 *     DMA Mask: \t 0x7fffffffffff
 *     Bus Location: \t 0000:07:00.0
 *     Device Minor: \t 0
 *     GPU Excluded:\t No
 * in a directory named by the PCI address ("%04x:%02x:%02x.%1x"), the device node being
 * /dev/nvidia<minor>. AMD's render nodes are DRM class devices: class/drm/renderD<N>, its
 * PCI function at class/drm/renderD<N>/device (vendor "0x1002"), the card<M> primary node in
 * device/drm/. */

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "constraint.h"
#include "device-info.h"
#include "devices.h"
#include "fd-util.h"
#include "parse-util.h"

#define DEVICES_MAX 64 /* SCHED_GPUS_MAX */
#define INFO_MAX (64 * 1024)

static const char *const device_vendor_table[_DEVICE_VENDOR_MAX] = {
        [DEVICE_VENDOR_NVIDIA] = "nvidia",
        [DEVICE_VENDOR_AMD] = "amd",
        [DEVICE_VENDOR_OTHER] = "other",
};
DEFINE_STRING_TABLE_LOOKUP(device_vendor, DeviceVendor);

void device_done(Device *d) {
        free(d->name);
        free(d->model);
        free(d->uuid);
        free(d->pci_address);
        free(d->mig_parent);
        free(d->mig_uuid);
        free(d->mig_profile);
        strv_free(d->nodes);
        strv_free(d->features);
        *d = (Device) {};
}

DeviceSet *device_set_free(DeviceSet *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_devices; i++)
                device_done(&s->devices[i]);
        free(s->devices);
        for (size_t v = 0; v < _DEVICE_VENDOR_MAX; v++)
                strv_free(s->shared_nodes[v]);
        strv_free(s->unscheduled);
        free(s);
        return NULL;
}

int device_set_add(DeviceSet *s, Device *d) {
        Device *n;

        if (s->n_devices >= DEVICES_MAX) {
                device_done(d);
                return -E2BIG;
        }
        n = reallocarray(s->devices, s->n_devices + 1, sizeof *n);
        if (!n) {
                device_done(d);
                return -ENOMEM;
        }
        s->devices = n;
        s->devices[s->n_devices++] = *d;
        *d = (Device) {};
        return 0;
}

const Device *device_set_find(const DeviceSet *s, const char *name) {
        for (size_t i = 0; s && name && i < s->n_devices; i++)
                if (streq(s->devices[i].name, name))
                        return &s->devices[i];
        return NULL;
}

static Device *find_pci(DeviceSet *s, const char *pci) {
        for (size_t i = 0; pci && i < s->n_devices; i++)
                if (s->devices[i].pci_address && strcasecmp(s->devices[i].pci_address, pci) == 0)
                        return &s->devices[i];
        return NULL;
}

/* ---- model token and features ---- */

static bool has_digit(const char *w) {
        return strpbrk(w, "0123456789");
}

static bool all_digits(const char *w) {
        return *w && strspn(w, "0123456789") == strlen(w);
}

char *device_model_token(const char *model) {
        /* Series words that name a line of cards rather than one: joined to an all-digit
         * model number that follows ("RTX 3090"), dropped otherwise. */
        static const char *const series[] = { "rtx", "gtx", "gt", "titan", "rx", "pro", "vega" };
        _cleanup_free_ char *copy = NULL;
        char *prev = NULL, *save = NULL;

        if (!model || !(copy = strdup(model)))
                return NULL;
        for (char *p = copy; *p; p++)
                *p = (char) tolower((unsigned char) *p);
        for (char *w = strtok_r(copy, " \t-_()[]/,", &save); w; w = strtok_r(NULL, " \t-_()[]/,", &save)) {
                if (!has_digit(w)) {
                        prev = NULL;
                        for (size_t i = 0; i < ELEMENTSOF(series); i++)
                                if (streq(w, series[i]))
                                        prev = w;
                        continue;
                }
                if (prev && all_digits(w)) {
                        char *t;
                        if (asprintf(&t, "%s%s", prev, w) < 0)
                                return NULL;
                        return t;
                }
                return strdup(w);
        }
        return NULL;
}

/* "gpu" for the GPU vendors, the vendor's name and the model token; a MIG device instead
 * of the token: "mig", its profile, the token and the profile ("a100_1g.10gb") and Slurm's
 * type for it ("nvidia_a100-sxm4-40gb_1g.10gb"), once NVML named it. */
int device_derive_features(Device *d) {
        _cleanup_free_ char *token = NULL, *mig_type = NULL;

        d->features = strv_free(d->features);
        if (d->vendor != DEVICE_VENDOR_OTHER && strv_extend(&d->features, "gpu") < 0)
                return -ENOMEM;
        if (d->vendor != DEVICE_VENDOR_OTHER && strv_extend(&d->features, device_vendor_to_string(d->vendor)) < 0)
                return -ENOMEM;
        token = device_model_token(d->model);
        if (d->mig) {
                if (strv_extend(&d->features, "mig") < 0)
                        return -ENOMEM;
                if (d->mig_profile) {
                        if (strv_extend(&d->features, d->mig_profile) < 0)
                                return -ENOMEM;
                        char slurm_type[256];

                        if (token && (asprintf(&mig_type, "%s_%s", token, d->mig_profile) < 0 ||
                                      strv_extend(&d->features, mig_type) < 0))
                                return -ENOMEM;
                        /* Slurm's NVML autodetection: its GPU's type, '_', the profile. */
                        mig_type = mfree(mig_type);
                        if (device_model_type_name(d->model, slurm_type, sizeof slurm_type)[0] &&
                            (asprintf(&mig_type, "%s_%s", slurm_type, d->mig_profile) < 0 ||
                             strv_extend(&d->features, mig_type) < 0))
                                return -ENOMEM;
                }
        } else if (token && !strv_contains(d->features, token) && strv_extend(&d->features, token) < 0)
                return -ENOMEM;
        if (!d->features && !(d->features = new0(char *, 1)))
                return -ENOMEM;
        return 0;
}

/* ---- discovery ---- */

/* "-1", "0", "1", ...; -1 also for a missing or broken file (the kernel says -1 when the
 * platform gives no locality). */
static int read_numa_node(int sysfs_fd, const char *pci) {
        _cleanup_free_ char *s = NULL, *path = NULL;
        int node;

        if (!pci || asprintf(&path, "bus/pci/devices/%s/numa_node", pci) < 0)
                return -1;
        if (read_file_at(sysfs_fd, path, 64, &s, NULL) < 0)
                return -1;
        s[strcspn(s, "\n")] = 0;
        if (safe_atoi(s, &node) < 0 || node < -1)
                return -1;
        return node;
}

/* The value of "Key:" in NVIDIA's information file: after the colon, blanks and tabs
 * skipped, to the end of the line. */
static char *info_value(const char *info, const char *key) {
        size_t n = strlen(key);

        for (const char *l = info; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
                if (strneq(l, key, n) && l[n] == ':') {
                        const char *v = l + n + 1;
                        v += strspn(v, " \t");
                        size_t len = strcspn(v, "\n");
                        while (len > 0 && (v[len - 1] == ' ' || v[len - 1] == '\t'))
                                len--;
                        return strndup(v, len);
                }
        return NULL;
}

static bool pci_address_is_valid(const char *s) {
        unsigned dom, bus, slot, fn;
        int n = 0;

        return s && sscanf(s, "%4x:%2x:%2x.%1x%n", &dom, &bus, &slot, &fn, &n) == 4 && (size_t) n == strlen(s) &&
               strlen(s) == 12;
}

/* "GPU-" and 36 characters of hex digits and dashes, as nvidia-smi -L prints it; the driver
 * prints question marks where it cannot read it. */
static bool uuid_is_valid(const char *s) {
        return s && strncasecmp(s, "GPU-", 4) == 0 && strlen(s) == 40 &&
               strspn(s + 4, "0123456789abcdefABCDEF-") == 36;
}

static int discover_nvidia_one(int sysfs_fd, int procfs_fd, const char *pci, Device *ret) {
        _cleanup_free_ char *path = NULL, *info = NULL, *minor_s = NULL, *excluded = NULL, *loc = NULL,
                            *uuid = NULL;
        _cleanup_(device_done) Device d = { .vendor = DEVICE_VENDOR_NVIDIA };
        unsigned minor;
        int r;

        if (asprintf(&path, "driver/nvidia/gpus/%s/information", pci) < 0)
                return -ENOMEM;
        r = read_file_at(procfs_fd, path, INFO_MAX, &info, NULL);
        if (r < 0)
                return r;
        minor_s = info_value(info, "Device Minor");
        if (!minor_s || safe_atou(minor_s, &minor) < 0 || minor > 254) /* 255 is nvidiactl */
                return -EBADMSG;
        /* Excluded by NVreg_ExcludedGpus (older drivers: "Blacklisted"): the driver serves it
         * to nobody. */
        excluded = info_value(info, "GPU Excluded") ?: info_value(info, "Blacklisted");
        if (excluded && strcasecmp(excluded, "yes") == 0)
                return -ENODEV;
        loc = info_value(info, "Bus Location");
        uuid = info_value(info, "GPU UUID");
        if (uuid_is_valid(uuid))
                d.uuid = TAKE_PTR(uuid);
        d.model = info_value(info, "Model");
        if (loc && pci_address_is_valid(loc))
                d.pci_address = strdup(loc);
        else if (pci_address_is_valid(pci))
                d.pci_address = strdup(pci);
        if ((pci_address_is_valid(loc) || pci_address_is_valid(pci)) && !d.pci_address)
                return -ENOMEM;
        if (d.model && isempty(d.model))
                d.model = mfree(d.model);
        d.ordinal = minor;
        d.numa_node = read_numa_node(sysfs_fd, d.pci_address);
        path = mfree(path);
        if (asprintf(&path, "/dev/nvidia%u", minor) < 0 || strv_push(&d.nodes, TAKE_PTR(path)) < 0)
                return -ENOMEM;
        if (!d.uuid && !d.pci_address) {
                /* No identity: it cannot be told from another card across a reload. */
                *ret = d;
                d = (Device) {};
                return -ENOKEY;
        }
        *ret = d;
        d = (Device) {};
        return 0;
}

static int discover_nvidia(int sysfs_fd, int procfs_fd, DeviceSet *s) {
        _cleanup_closedir_ DIR *dir = NULL;
        int r;

        r = opendir_at(procfs_fd, "driver/nvidia/gpus", 0, &dir);
        if (r < 0)
                return r == -ENOMEM ? r : 0; /* no driver loaded */
        for (struct dirent *de; (de = readdir(dir));) {
                Device d;

                if (de->d_name[0] == '.')
                        continue;
                r = discover_nvidia_one(sysfs_fd, procfs_fd, de->d_name, &d);
                if (r == -ENOMEM)
                        return r;
                if (r == -ENOKEY) {
                        _cleanup_free_ char *why = NULL;

                        r = asprintf(&why, "%s (%s, %s): neither a UUID nor a PCI address is readable, so it "
                                     "cannot be told from another card; it is given to nobody",
                                     de->d_name, !d.nodes || !d.nodes[0] ? "?" : d.nodes[0], d.model ?: "model unknown");
                        device_done(&d);
                        if (r < 0 || strv_push(&s->unscheduled, TAKE_PTR(why)) < 0)
                                return -ENOMEM;
                        continue;
                }
                if (r < 0)
                        continue; /* a broken or excluded GPU: not schedulable */
                r = device_set_add(s, &d);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The PCI address a sysfs device link points to: its last component. */
static char *pci_of_link(int sysfs_fd, const char *link) {
        char buf[PATH_MAX];
        ssize_t n = readlinkat(sysfs_fd, link, buf, sizeof buf - 1);
        const char *base;

        if (n <= 0)
                return NULL;
        buf[n] = 0;
        base = strrchr(buf, '/');
        base = base ? base + 1 : buf;
        return pci_address_is_valid(base) ? strdup(base) : NULL;
}

static int discover_amd_one(int sysfs_fd, const char *render, Device *ret) {
        _cleanup_(device_done) Device d = { .vendor = DEVICE_VENDOR_AMD };
        _cleanup_free_ char *path = NULL, *vendor = NULL, *product = NULL, *devid = NULL;
        _cleanup_closedir_ DIR *drm = NULL;
        unsigned minor;

        if (safe_atou(render + strlen("renderD"), &minor) < 0)
                return -EINVAL;
        if (asprintf(&path, "class/drm/%s/device/vendor", render) < 0)
                return -ENOMEM;
        if (read_file_at(sysfs_fd, path, 64, &vendor, NULL) < 0)
                return -ENODEV;
        vendor[strcspn(vendor, "\n")] = 0;
        if (strcasecmp(vendor, "0x1002") != 0)
                return -ENODEV;

        free(path);
        if (asprintf(&path, "class/drm/%s/device", render) < 0)
                return -ENOMEM;
        d.pci_address = pci_of_link(sysfs_fd, path);
        if (!d.pci_address)
                return -EBADMSG;

        /* product_name is amdgpu's, from the board's FRU, on Instinct and some Radeon Pro
         * cards; otherwise the PCI ids name it. */
        free(path);
        if (asprintf(&path, "class/drm/%s/device/product_name", render) < 0)
                return -ENOMEM;
        if (read_file_at(sysfs_fd, path, 4096, &product, NULL) >= 0) {
                product[strcspn(product, "\n")] = 0;
                if (!isempty(product))
                        d.model = TAKE_PTR(product);
        }
        if (!d.model) {
                free(path);
                if (asprintf(&path, "class/drm/%s/device/device", render) < 0)
                        return -ENOMEM;
                if (read_file_at(sysfs_fd, path, 64, &devid, NULL) >= 0) {
                        devid[strcspn(devid, "\n")] = 0;
                        if (asprintf(&d.model, "AMD %s:%s", vendor, devid) < 0)
                                return -ENOMEM;
                }
        }
        d.ordinal = minor;
        d.numa_node = read_numa_node(sysfs_fd, d.pci_address);
        free(path);
        if (asprintf(&path, "/dev/dri/%s", render) < 0 || strv_push(&d.nodes, TAKE_PTR(path)) < 0)
                return -ENOMEM;

        /* Its primary node too: some runtimes open card<M> for the same GPU. */
        if (asprintf(&path, "class/drm/%s/device/drm", render) < 0)
                return -ENOMEM;
        if (opendir_at(sysfs_fd, path, 0, &drm) >= 0)
                for (struct dirent *de; (de = readdir(drm));) {
                        unsigned card;
                        char *node;

                        if (!strneq(de->d_name, "card", 4) || safe_atou(de->d_name + 4, &card) < 0)
                                continue;
                        if (asprintf(&node, "/dev/dri/card%u", card) < 0 || strv_push(&d.nodes, node) < 0)
                                return -ENOMEM;
                }
        *ret = d;
        d = (Device) {};
        return 0;
}

static int discover_amd(int sysfs_fd, DeviceSet *s) {
        _cleanup_closedir_ DIR *dir = NULL;
        int r;

        r = opendir_at(sysfs_fd, "class/drm", 0, &dir);
        if (r < 0)
                return r == -ENOMEM ? r : 0;
        for (struct dirent *de; (de = readdir(dir));) {
                Device d;

                if (!strneq(de->d_name, "renderD", 7))
                        continue;
                r = discover_amd_one(sysfs_fd, de->d_name, &d);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        continue; /* another vendor's, or broken */
                r = device_set_add(s, &d);
                if (r < 0)
                        return r;
        }
        return 0;
}

static bool node_exists(int dev_fd, const char *abs) {
        struct stat st;

        return strneq(abs, "/dev/", 5) && fstatat(dev_fd, abs + 5, &st, 0) >= 0;
}

static int add_shared(DeviceSet *s, int dev_fd, DeviceVendor v, const char *abs) {
        if (!node_exists(dev_fd, abs) || strv_contains(s->shared_nodes[v], abs))
                return 0;
        return strv_extend(&s->shared_nodes[v], abs);
}

/* The control nodes the vendors' runtimes open beside a GPU's own. */
static int discover_shared(int dev_fd, DeviceSet *s) {
        /* CUDA opens nvidiactl and nvidia-uvm for any work, nvidia-uvm-tools for profilers,
         * nvidia-modeset for the display and Vulkan paths. Not the nvidia-caps nodes: those
         * grant MIG instances and the system-wide configuration and monitoring of every
         * GPU, which no one job's GPUs are. */
        static const char *const nvidia[] = { "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                                              "/dev/nvidia-modeset" };
        int r;

        for (size_t i = 0; i < ELEMENTSOF(nvidia); i++)
                if ((r = add_shared(s, dev_fd, DEVICE_VENDOR_NVIDIA, nvidia[i])) < 0)
                        return r;
        return add_shared(s, dev_fd, DEVICE_VENDOR_AMD, "/dev/kfd");
}

static int device_cmp(const void *a, const void *b) {
        const Device *x = a, *y = b;
        int c;

        if (x->vendor != y->vendor)
                return x->vendor < y->vendor ? -1 : 1;
        if (!x->pci_address != !y->pci_address)
                return x->pci_address ? -1 : 1;
        if (x->pci_address && (c = strcasecmp(x->pci_address, y->pci_address)) != 0)
                return c;
        /* MIG devices (no PCI address of their own) after the cards, by GPU, GI and CI. */
        if (x->mig != y->mig)
                return x->mig ? 1 : -1;
        if (x->mig && (c = strcmp(strempty(x->mig_parent), strempty(y->mig_parent))) != 0)
                return c;
        if (x->mig && (x->mig_gi != y->mig_gi || x->mig_ci != y->mig_ci))
                return x->mig_gi != y->mig_gi ? (x->mig_gi < y->mig_gi ? -1 : 1) : (x->mig_ci < y->mig_ci ? -1 : 1);
        return strverscmp(strempty(x->name), strempty(y->name));
}

int device_set_finish(DeviceSet *s) {
        bool has[_DEVICE_VENDOR_MAX] = {};

        if (s->n_devices > DEVICES_MAX)
                return -E2BIG;
        if (s->n_devices > 0 && !s->placed)
                qsort(s->devices, s->n_devices, sizeof *s->devices, device_cmp);
        for (size_t i = 0; i < s->n_devices; i++)
                has[s->devices[i].vendor] = true;
        for (size_t v = 0; v < _DEVICE_VENDOR_MAX; v++)
                if (!has[v])
                        s->shared_nodes[v] = strv_free(s->shared_nodes[v]);
        return 0;
}

int devices_discover(int sysfs_fd, int procfs_fd, int dev_fd, DeviceSet **ret) {
        _cleanup_(device_set_freep) DeviceSet *s = new0(DeviceSet, 1);
        int r;

        if (!s)
                return -ENOMEM;
        if ((r = discover_nvidia(sysfs_fd, procfs_fd, s)) < 0 || (r = discover_amd(sysfs_fd, s)) < 0)
                return r;
        r = discover_shared(dev_fd, s);
        if (r < 0)
                return r;
        /* Sorted, but the shared nodes stay until device_set_finish(): a [Device] section may
         * declare a GPU of a vendor discovery found none of (a test's fake GPUs). */
        r = device_set_sort(s);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

int device_set_sort(DeviceSet *s) {
        int r;

        if (s->n_devices > 0)
                qsort(s->devices, s->n_devices, sizeof *s->devices, device_cmp);
        /* Names by that order, so gpu<i> is the i-th GPU as corral info lists them. */
        for (size_t i = 0; i < s->n_devices; i++) {
                Device *d = &s->devices[i];

                d->name = mfree(d->name);
                if (asprintf(&d->name, "gpu%zu", i) < 0)
                        return -ENOMEM;
                d->auto_name = true;
                r = device_derive_features(d);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- identity and indexes ---- */

const char *device_key(const Device *d) {
        return d->uuid ?: d->pci_address ?: d->name;
}

bool device_same(const Device *a, const Device *b) {
        if (a->uuid && b->uuid)
                return strcasecmp(a->uuid, b->uuid) == 0;
        if (a->pci_address && b->pci_address)
                return strcasecmp(a->pci_address, b->pci_address) == 0;
        if (a->uuid || a->pci_address || b->uuid || b->pci_address)
                return false;
        return a->name && b->name && streq(a->name, b->name);
}

/* A gone placeholder of k (or of nothing: an index no card had, named gpu<i>). */
static int placeholder(const Device *k, size_t i, Device *ret) {
        Device d = { .vendor = k ? k->vendor : DEVICE_VENDOR_OTHER, .numa_node = -1, .gone = true,
                     .auto_name = k ? k->auto_name : true, .mig = k && k->mig, .mig_gi = k ? k->mig_gi : 0,
                     .mig_ci = k ? k->mig_ci : 0, .memory = k ? k->memory : 0 };

        if (k && k->name)
                d.name = strdup(k->name);
        else if (asprintf(&d.name, "gpu%zu", i) < 0)
                d.name = NULL;
        if (!d.name || (k && k->uuid && !(d.uuid = strdup(k->uuid))) ||
            (k && k->pci_address && !(d.pci_address = strdup(k->pci_address))) ||
            (k && k->model && !(d.model = strdup(k->model))) ||
            (k && k->nodes && !(d.nodes = strv_copy(k->nodes))) || !(d.features = new0(char *, 1)) ||
            (k && k->mig_parent && !(d.mig_parent = strdup(k->mig_parent))) ||
            (k && k->mig_uuid && !(d.mig_uuid = strdup(k->mig_uuid))) ||
            (k && k->mig_profile && !(d.mig_profile = strdup(k->mig_profile)))) {
                device_done(&d);
                return -ENOMEM;
        }
        *ret = d;
        return 0;
}

int device_set_place(DeviceSet *s, const DeviceSet *known, uint64_t reusable) {
        size_t n_known = known ? MIN(known->n_devices, (size_t) DEVICES_MAX) : 0, n = 0;
        ssize_t at[DEVICES_MAX]; /* at[i]: the device of s given index i; -1: none */
        ssize_t *index = NULL;
        Device *v = NULL;
        int r = -ENOMEM;

        /* Placed already: device_set_apply() kept each device at its index, revived a
         * declared one at its own, appended a new one at the next. */
        if (s->placed)
                return 0;
        for (size_t i = 0; i < DEVICES_MAX; i++)
                at[i] = -1;
        index = new(ssize_t, s->n_devices + 1);
        if (!index)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_devices; i++) {
                index[i] = -1;
                if (s->devices[i].gone)
                        continue;
                for (size_t k = 0; k < n_known; k++)
                        if (at[k] < 0 && device_same(&known->devices[k], &s->devices[i])) {
                                at[k] = (ssize_t) i;
                                index[i] = (ssize_t) k;
                                break;
                        }
        }
        /* New cards, in their order in s: the lowest index no card had, then the lowest of
         * a card gone whose bit may be reused. */
        for (size_t i = 0; i < s->n_devices; i++) {
                if (s->devices[i].gone || index[i] >= 0)
                        continue;
                for (size_t k = n_known; k < DEVICES_MAX && index[i] < 0; k++)
                        if (at[k] < 0)
                                index[i] = (ssize_t) k;
                for (size_t k = 0; k < n_known && index[i] < 0; k++)
                        if (at[k] < 0 && (reusable & (UINT64_C(1) << k)))
                                index[i] = (ssize_t) k;
                if (index[i] >= 0)
                        at[index[i]] = (ssize_t) i;
        }
        for (size_t i = 0; i < DEVICES_MAX; i++)
                if (at[i] >= 0 || i < n_known)
                        n = i + 1;

        v = new0(Device, MAX(n, (size_t) 1));
        if (!v)
                goto finish;
        for (size_t i = 0; i < n; i++) {
                Device *d;

                if (at[i] < 0) {
                        if (placeholder(i < n_known ? &known->devices[i] : NULL, i, &v[i]) < 0)
                                goto finish;
                        continue;
                }
                d = &s->devices[at[i]];
                v[i] = *d;
                *d = (Device) {};
                /* A UUID the driver did not print this time (it prints question marks
                 * until the GPU is initialised) is remembered, not forgotten. */
                if (!v[i].uuid && i < n_known && known->devices[i].uuid &&
                    !(v[i].uuid = strdup(known->devices[i].uuid)))
                        goto finish;
                /* A MIG device keeps what NVML said of it (procfs does not say it) until
                 * NVML reads it again: its type stays matched across a reload. */
                if (v[i].mig && !v[i].mig_profile && i < n_known && known->devices[i].mig_profile) {
                        if (!(v[i].mig_profile = strdup(known->devices[i].mig_profile)) ||
                            (known->devices[i].mig_uuid && !(v[i].mig_uuid = strdup(known->devices[i].mig_uuid))) ||
                            device_derive_features(&v[i]) < 0)
                                goto finish;
                        v[i].memory = known->devices[i].memory;
                }
                if (v[i].auto_name) {
                        free(v[i].name);
                        if (asprintf(&v[i].name, "gpu%zu", i) < 0) {
                                v[i].name = NULL;
                                goto finish;
                        }
                }
        }
        /* What is left: cards no index is left for. */
        for (size_t i = 0; i < s->n_devices; i++) {
                Device *d = &s->devices[i];
                _cleanup_free_ char *why = NULL;

                if (!d->name)
                        continue; /* moved */
                if (!d->gone) {
                        if (asprintf(&why, "%s (%s): %d cards were known already, no index is left for it; it is "
                                     "given to nobody", device_key(d), d->model ?: "model unknown", DEVICES_MAX) < 0 ||
                            strv_push(&s->unscheduled, TAKE_PTR(why)) < 0)
                                goto finish;
                }
                device_done(d);
        }
        free(s->devices);
        s->devices = TAKE_PTR(v);
        s->n_devices = n;
        s->placed = true;
        r = 0;
finish:
        if (v) {
                for (size_t i = 0; i < n; i++)
                        device_done(&v[i]);
                free(v);
        }
        free(index);
        return r;
}

/* ---- declarations ---- */

int device_set_apply(DeviceSet *s, const DeviceDecl *decl, char **ret_error) {
        Device *d = NULL;
        DeviceVendor vendor = _DEVICE_VENDOR_INVALID;
        bool fresh = false;
        int r;

        if (decl->vendor) {
                vendor = device_vendor_from_string(decl->vendor);
                if ((int) vendor < 0)
                        return asprintf(ret_error, "Vendor=%s is not nvidia, amd or other", decl->vendor) < 0
                                       ? -ENOMEM
                                       : -EINVAL;
        }
        if (decl->name)
                d = (Device *) device_set_find(s, decl->name);
        if (!d && decl->pci_address)
                d = find_pci(s, decl->pci_address);

        if (decl->hide) {
                if (!d)
                        return 1;
                if (s->placed) {
                        /* Its index stays its own: a job may hold it. */
                        d->gone = true;
                        return 0;
                }
                size_t i = (size_t) (d - s->devices);
                device_done(d);
                memmove(d, d + 1, (s->n_devices - i - 1) * sizeof *d);
                s->n_devices--;
                return 0;
        }
        if (d && d->gone && d->auto_name && d->uuid && decl->name && decl->nodes) {
                /* A card discovery named by its index (gpu0) and that is gone since (its UUID:
                 * gone is gone) does not keep a declaration (Nodes=) from that name, even at
                 * its PCI address: the declared device is another one, present as declared,
                 * and the card's placeholder, at its index still, takes another name. */
                char *renamed;

                if (asprintf(&renamed, "%s-gone", d->name) < 0)
                        return -ENOMEM;
                free(d->name);
                d->name = renamed;
                d = NULL;
        }
        if (!d) {
                Device n = { .vendor = (int) vendor >= 0 ? vendor : DEVICE_VENDOR_OTHER, .numa_node = -1 };

                if (!decl->name && decl->pci_address && !decl->nodes)
                        return 1; /* overrides a device this machine does not have */
                if (!decl->name || strv_length(decl->nodes) == 0)
                        return asprintf(ret_error, "a [Device] that declares a device needs Name= and Nodes=") < 0
                                       ? -ENOMEM
                                       : -EINVAL;
                if (!(n.name = strdup(decl->name)))
                        return -ENOMEM;
                r = device_set_add(s, &n);
                if (r == -E2BIG)
                        return asprintf(ret_error, "more than %d devices", DEVICES_MAX) < 0 ? -ENOMEM : -EINVAL;
                if (r < 0)
                        return r;
                d = &s->devices[s->n_devices - 1];
                fresh = true;
        } else if (d->gone && !d->uuid && decl->nodes &&
                   (!d->pci_address || !decl->pci_address || strcasecmp(d->pci_address, decl->pci_address) == 0)) {
                /* A declared device known before (device_set_place()), declared again (a
                 * card the driver numbered has a UUID: gone is gone). Its placeholder may
                 * have the address an earlier declaration gave it: the declaration now is
                 * what it is. */
                d->gone = false;
                fresh = true;
                if (!decl->pci_address)
                        d->pci_address = mfree(d->pci_address);
        } else if (decl->name && !streq(d->name, decl->name)) {
                /* Matched by PCIAddress=: Name= renames it, unless that name is taken. */
                if (device_set_find(s, decl->name))
                        return asprintf(ret_error, "Name=%s is another device's", decl->name) < 0 ? -ENOMEM
                                                                                                 : -EINVAL;
                free(d->name);
                if (!(d->name = strdup(decl->name)))
                        return -ENOMEM;
                d->auto_name = false;
        }
        if ((int) vendor >= 0)
                d->vendor = vendor;
        if (decl->pci_address) {
                free(d->pci_address);
                if (!(d->pci_address = strdup(decl->pci_address)))
                        return -ENOMEM;
        }
        if (decl->nodes) {
                strv_free(d->nodes);
                if (!(d->nodes = strv_copy(decl->nodes)))
                        return -ENOMEM;
        }
        if (decl->model) {
                free(d->model);
                if (!(d->model = strdup(decl->model)))
                        return -ENOMEM;
        }
        if (decl->numa_node_set)
                d->numa_node = decl->numa_node;
        if (decl->shards_set) {
                d->shards = decl->shards;
                d->shards_set = true;
        }
        if (decl->features) {
                strv_free(d->features);
                if (!(d->features = strv_copy(decl->features)))
                        return -ENOMEM;
                for (char **f = d->features; *f; f++)
                        for (char *p = *f; *p; p++)
                                *p = (char) tolower((unsigned char) *p);
        } else if (fresh || decl->model || (int) vendor >= 0) {
                r = device_derive_features(d);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- matching ---- */

bool device_matches(const Device *d, const char *type, const char *constraint) {
        char model_type[256];

        if (d->mig)
                model_type[0] = '\0'; /* a slice of an A100 is no A100 */
        else
                device_model_type_name(d->model, model_type, sizeof model_type);
        if (!isempty(type)) {
                bool ok = strcasecmp(d->name, type) == 0 || strcasecmp(model_type, type) == 0 ||
                          (!d->mig && d->model && strcasestr(d->model, type));

                STRV_FOREACH(f, d->features)
                        ok = ok || strcasecmp(*f, type) == 0;
                if (!ok)
                        return false;
        }
        if (!isempty(constraint)) {
                size_t n = strv_length(d->features);
                _cleanup_free_ char **names = new0(char *, n + 3);

                if (!names)
                        return false;
                for (size_t i = 0; i < n; i++)
                        names[i] = d->features[i];
                names[n] = d->name;
                names[n + 1] = model_type[0] ? model_type : NULL;
                return constraint_matches(constraint, names);
        }
        return true;
}

/* ---- the fence's base ---- */

/* NVIDIA's fixed major: /dev/nvidia<N>, nvidiactl, nvidia-modeset. */
#define NVIDIA_MAJOR 195u
#define MINOR_ALL UINT_MAX

typedef struct DevNum {
        char type; /* 'c' or 'b' */
        unsigned major, minor; /* MINOR_ALL: every node of that major */
} DevNum;

typedef struct Fenced {
        DevNum *nums;
        size_t n, allocated;
} Fenced;

static bool fenced_has_major(const Fenced *f, char type, unsigned major) {
        for (size_t i = 0; i < f->n; i++)
                if (f->nums[i].type == type && f->nums[i].major == major)
                        return true;
        return false;
}

static bool fenced_has(const Fenced *f, char type, unsigned major, unsigned minor) {
        for (size_t i = 0; i < f->n; i++)
                if (f->nums[i].type == type && f->nums[i].major == major &&
                    (f->nums[i].minor == minor || f->nums[i].minor == MINOR_ALL))
                        return true;
        return false;
}

static int fence_node(Fenced *f, int dev_fd, const char *abs) {
        struct stat st;

        if (!strneq(abs, "/dev/", 5) || fstatat(dev_fd, abs + 5, &st, 0) < 0)
                return 0; /* not there: nothing to withhold */
        if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode))
                return 0;
        if (!GREEDY_REALLOC(f->nums, f->allocated, f->n + 1))
                return -ENOMEM;
        f->nums[f->n++] = (DevNum) { S_ISCHR(st.st_mode) ? 'c' : 'b', major(st.st_rdev), minor(st.st_rdev) };
        return 0;
}

static int fence_major(Fenced *f, char type, unsigned major) {
        if (fenced_has(f, type, major, MINOR_ALL))
                return 0;
        if (!GREEDY_REALLOC(f->nums, f->allocated, f->n + 1))
                return -ENOMEM;
        f->nums[f->n++] = (DevNum) { type, major, MINOR_ALL };
        return 0;
}

/* An NVIDIA device's node: every node of its major is withheld, whatever card, present,
 * gone or never scheduled, it opens. */
static int fence_node_major(Fenced *f, int dev_fd, const char *abs) {
        struct stat st;

        if (!strneq(abs, "/dev/", 5) || fstatat(dev_fd, abs + 5, &st, 0) < 0 || !S_ISCHR(st.st_mode))
                return 0;
        return fence_major(f, 'c', major(st.st_rdev));
}

/* The DRM nodes (card<N>, renderD<N>) of NVIDIA's cards, by their PCI function's vendor:
 * nvidia-drm serves the card's memory and display through them. */
static int fence_nvidia_drm(Fenced *f, int sysfs_fd, int dev_fd) {
        _cleanup_closedir_ DIR *dir = NULL;
        int r;

        if (opendir_at(sysfs_fd, "class/drm", 0, &dir) < 0)
                return 0;
        for (struct dirent *de; (de = readdir(dir));) {
                _cleanup_free_ char *path = NULL, *vendor = NULL, *node = NULL;

                if (!strneq(de->d_name, "card", 4) && !strneq(de->d_name, "renderD", 7))
                        continue;
                if (strchr(de->d_name, '-'))
                        continue; /* a connector, card0-HDMI-A-1 */
                if (asprintf(&path, "class/drm/%s/device/vendor", de->d_name) < 0)
                        return -ENOMEM;
                if (read_file_at(sysfs_fd, path, 64, &vendor, NULL) < 0)
                        continue;
                vendor[strcspn(vendor, "\n")] = 0;
                if (strcasecmp(vendor, "0x10de") != 0)
                        continue;
                if (asprintf(&node, "/dev/dri/%s", de->d_name) < 0)
                        return -ENOMEM;
                if ((r = fence_node(f, dev_fd, node)) < 0)
                        return r;
        }
        return 0;
}


typedef struct Driver {
        char type;
        unsigned major;
        char *name;
} Driver;

/* /proc/devices: "Character devices:" and "Block devices:" sections of "%3d %s" lines. */
static int read_drivers(int procfs_fd, Driver **ret, size_t *ret_n) {
        _cleanup_free_ char *text = NULL;
        Driver *v = NULL;
        size_t n = 0, allocated = 0;
        char type = 0, *save = NULL;
        int r;

        r = read_file_at(procfs_fd, "devices", 256 * 1024, &text, NULL);
        if (r < 0)
                return r;
        for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                unsigned major;
                char *name;

                if (streq(l, "Character devices:")) {
                        type = 'c';
                        continue;
                }
                if (streq(l, "Block devices:")) {
                        type = 'b';
                        continue;
                }
                l += strspn(l, " ");
                name = l + strcspn(l, " \t");
                if (!type || !*name)
                        continue;
                *name++ = 0;
                name += strspn(name, " \t");
                if (safe_atou(l, &major) < 0 || major == 0 || !*name)
                        continue;
                if (!GREEDY_REALLOC(v, allocated, n + 1) || !(name = strdup(name))) {
                        r = -ENOMEM;
                        goto fail;
                }
                v[n++] = (Driver) { type, major, name };
        }
        *ret = v;
        *ret_n = n;
        return 0;
fail:
        for (size_t i = 0; i < n; i++)
                free(v[i].name);
        free(v);
        return r;
}

/* systemd matches the name with fnmatch(3): its special characters are escaped. */
static char *allow_pattern(char type, const char *name) {
        char *s = malloc(strlen(name) * 2 + 8), *p = s;

        if (!s)
                return NULL;
        p = stpcpy(p, type == 'c' ? "char-" : "block-");
        for (const char *c = name; *c; c++) {
                if (strchr("*?[]\\", *c))
                        *p++ = '\\';
                *p++ = *c;
        }
        *p = 0;
        return s;
}

static bool driver_allowed(const Driver *v, size_t n, char type, unsigned major, const Fenced *f) {
        for (size_t i = 0; i < n; i++)
                if (v[i].type == type && v[i].major == major) {
                        /* Allowed by name unless that name is withheld (one of its majors is fenced). */
                        bool withheld = false;
                        for (size_t k = 0; k < n; k++)
                                if (v[k].type == type && streq(v[k].name, v[i].name) &&
                                    fenced_has_major(f, type, v[k].major))
                                        withheld = true;
                        if (!withheld)
                                return true;
                }
        return false;
}

/* The nodes below dir (relative to dev_fd) not covered by an allowed driver name, and not
 * fenced, by path. Mounted pseudo file systems are left out: their nodes (ptys) are
 * allowed by their drivers' names. */
static int scan_dev(int dev_fd, const char *dir, unsigned depth, const Driver *v, size_t n, const Fenced *f,
                    char ***list) {
        _cleanup_closedir_ DIR *d = NULL;
        int r;

        if (opendir_at(dev_fd, dir, O_NOFOLLOW, &d) < 0)
                return 0;
        for (struct dirent *de; (de = readdir(d));) {
                _cleanup_free_ char *rel = NULL;
                struct stat st;
                char type;

                if (de->d_name[0] == '.')
                        continue;
                if (asprintf(&rel, "%s%s%s", streq(dir, ".") ? "" : dir, streq(dir, ".") ? "" : "/", de->d_name) < 0)
                        return -ENOMEM;
                if (fstatat(dev_fd, rel, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (S_ISDIR(st.st_mode)) {
                        if (depth >= 3 || (streq(dir, ".") && (streq(de->d_name, "pts") || streq(de->d_name, "shm") ||
                                                              streq(de->d_name, "mqueue") ||
                                                              streq(de->d_name, "hugepages"))))
                                continue;
                        r = scan_dev(dev_fd, rel, depth + 1, v, n, f, list);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode))
                        continue;
                type = S_ISCHR(st.st_mode) ? 'c' : 'b';
                if (fenced_has(f, type, major(st.st_rdev), minor(st.st_rdev)) ||
                    driver_allowed(v, n, type, major(st.st_rdev), f))
                        continue;
                _cleanup_free_ char *abs = NULL;
                if (asprintf(&abs, "/dev/%s", rel) < 0 || strv_extend(list, abs) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int device_fence_base(int sysfs_fd, int procfs_fd, int dev_fd, const DeviceSet *s, char ***ret) {
        _cleanup_strv_free_ char **list = NULL;
        Fenced f = {};
        Driver *v = NULL;
        size_t n = 0;
        int r;

        for (size_t i = 0; i < s->n_devices; i++)
                STRV_FOREACH(p, s->devices[i].nodes)
                        if ((r = s->devices[i].vendor == DEVICE_VENDOR_NVIDIA ? fence_node_major(&f, dev_fd, *p)
                                                                               : fence_node(&f, dev_fd, *p)) < 0)
                                goto finish;
        for (size_t k = 0; k < _DEVICE_VENDOR_MAX; k++)
                STRV_FOREACH(p, s->shared_nodes[k])
                        if ((r = fence_node(&f, dev_fd, *p)) < 0)
                                goto finish;
        /* Everything NVIDIA's drivers serve: the cards' major (a card gone, hidden or
         * excluded keeps its node), nvidia-uvm, nvidia-caps (MIG), nvidia-nvswitch, ... and
         * the cards' DRM nodes. A job is given its own cards' nodes and the shared ones by
         * path (job-spec-build.c). */
        if ((r = fence_major(&f, 'c', NVIDIA_MAJOR)) < 0 || (r = fence_nvidia_drm(&f, sysfs_fd, dev_fd)) < 0)
                goto finish;

        r = read_drivers(procfs_fd, &v, &n);
        if (r < 0)
                goto finish;
        for (size_t i = 0; i < n; i++)
                if (v[i].type == 'c' && strneq(v[i].name, "nvidia", 6) && (r = fence_major(&f, 'c', v[i].major)) < 0)
                        goto finish;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *pat = NULL;
                bool seen = false;

                for (size_t k = 0; k < i; k++)
                        seen = seen || (v[k].type == v[i].type && streq(v[k].name, v[i].name));
                if (seen || !driver_allowed(v, n, v[i].type, v[i].major, &f))
                        continue;
                if (!(pat = allow_pattern(v[i].type, v[i].name)) || strv_extend(&list, pat) < 0) {
                        r = -ENOMEM;
                        goto finish;
                }
        }
        r = scan_dev(dev_fd, ".", 0, v, n, &f, &list);
        if (r < 0)
                goto finish;
        if (!list && !(list = new0(char *, 1))) {
                r = -ENOMEM;
                goto finish;
        }
        *ret = TAKE_PTR(list);
        r = 0;
finish:
        for (size_t i = 0; i < n; i++)
                free(v[i].name);
        free(v);
        free(f.nums);
        return r;
}
