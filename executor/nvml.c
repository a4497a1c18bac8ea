/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvml.h"

/* NVML's types, as NVIDIA's public nvml.h declares them (CUDA 11/12). Only what the calls
 * below take; the layouts must match the header's byte for byte. */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_TEMPERATURE_GPU 0
#define NVML_VALUE_NOT_AVAILABLE_ULL (~0ULL)

typedef struct nvmlMemory_st {
        unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct nvmlPciInfo_st {
        char busIdLegacy[16];  /* NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE */
        unsigned int domain, bus, device;
        unsigned int pciDeviceId, pciSubSystemId;
        char busId[32];        /* NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE */
} nvmlPciInfo_t;

typedef struct nvmlUtilization_st {
        unsigned int gpu, memory;
} nvmlUtilization_t;

/* nvmlProcessInfo_v2_t, which the _v3 process calls fill. */
typedef struct nvmlProcessInfo_st {
        unsigned int pid;
        unsigned long long usedGpuMemory;
        unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

/* The calls, by the names libnvidia-ml.so.1 exports. The first five are required. */
#define NVML_CALLS(X)                                                                              \
        X(true, nvmlInit_v2, nvmlReturn_t, (void))                                                 \
        X(true, nvmlShutdown, nvmlReturn_t, (void))                                                \
        X(true, nvmlErrorString, const char *, (nvmlReturn_t))                                     \
        X(true, nvmlDeviceGetCount_v2, nvmlReturn_t, (unsigned int *))                             \
        X(true, nvmlDeviceGetHandleByIndex_v2, nvmlReturn_t, (unsigned int, nvmlDevice_t *))       \
        X(true, nvmlDeviceGetUUID, nvmlReturn_t, (nvmlDevice_t, char *, unsigned int))             \
        X(false, nvmlDeviceGetName, nvmlReturn_t, (nvmlDevice_t, char *, unsigned int))            \
        X(false, nvmlDeviceGetMemoryInfo, nvmlReturn_t, (nvmlDevice_t, nvmlMemory_t *))            \
        X(false, nvmlDeviceGetPciInfo_v3, nvmlReturn_t, (nvmlDevice_t, nvmlPciInfo_t *))           \
        X(false, nvmlDeviceGetNumaNodeId, nvmlReturn_t, (nvmlDevice_t, unsigned int *))            \
        X(false, nvmlDeviceGetMigMode, nvmlReturn_t, (nvmlDevice_t, unsigned int *, unsigned int *)) \
        X(false, nvmlDeviceGetCpuAffinity, nvmlReturn_t, (nvmlDevice_t, unsigned int, unsigned long *)) \
        X(false, nvmlDeviceGetUtilizationRates, nvmlReturn_t, (nvmlDevice_t, nvmlUtilization_t *)) \
        X(false, nvmlDeviceGetTotalEnergyConsumption, nvmlReturn_t, (nvmlDevice_t, unsigned long long *)) \
        X(false, nvmlDeviceGetPowerUsage, nvmlReturn_t, (nvmlDevice_t, unsigned int *))            \
        X(false, nvmlDeviceGetTemperature, nvmlReturn_t, (nvmlDevice_t, int, unsigned int *))      \
        X(false, nvmlDeviceGetComputeRunningProcesses_v3, nvmlReturn_t,                            \
          (nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *))                                     \
        X(false, nvmlDeviceGetMaxMigDeviceCount, nvmlReturn_t, (nvmlDevice_t, unsigned int *))     \
        X(false, nvmlDeviceGetMigDeviceHandleByIndex, nvmlReturn_t,                                \
          (nvmlDevice_t, unsigned int, nvmlDevice_t *))                                            \
        X(false, nvmlDeviceGetGpuInstanceId, nvmlReturn_t, (nvmlDevice_t, unsigned int *))         \
        X(false, nvmlDeviceGetComputeInstanceId, nvmlReturn_t, (nvmlDevice_t, unsigned int *))     \
        X(false, nvmlDeviceGetNvLinkState, nvmlReturn_t, (nvmlDevice_t, unsigned int, int *))      \
        X(false, nvmlDeviceGetNvLinkRemotePciInfo_v2, nvmlReturn_t,                                \
          (nvmlDevice_t, unsigned int, nvmlPciInfo_t *))

struct Nvml {
        void *dl;
        char *path;
#define NVML_FIELD(required, name, ret, args) ret(*name) args;
        NVML_CALLS(NVML_FIELD)
#undef NVML_FIELD
};

/* The processes asked for at most: a bound on what one GPU's reply may allocate. */
#define NVML_PROCESSES_ASK_MAX 4096U

static void nvlinks(Nvml *n, nvmlDevice_t d, NvmlGpuInfo *info);
static void migs(Nvml *n, nvmlDevice_t d, NvmlGpuInfo *info);

static const char *nvml_error(Nvml *n, nvmlReturn_t r, char *buf, size_t size) {
        const char *s = n->nvmlErrorString ? n->nvmlErrorString(r) : NULL;

        if (!s)
                snprintf(buf, size, "error %d", r);
        else
                nvml_string_copy(buf, size, s, 128);
        return buf;
}

static int fail(Nvml *n, int err, char **ret_error, const char *what, nvmlReturn_t r) {
        char buf[160];

        if (ret_error) {
                free(*ret_error);
                if (asprintf(ret_error, "%s failed: %s", what, nvml_error(n, r, buf, sizeof buf)) < 0)
                        *ret_error = NULL;
        }
        return err;
}

void nvml_string_copy(char *dst, size_t dst_size, const char *src, size_t size) {
        size_t i = 0;

        assert(dst && dst_size > 0);
        for (; src && i < size && i + 1 < dst_size && src[i]; i++)
                dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';
        dst[i] = '\0';
}

static int hex_value(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

int nvml_pci_address_normalize(const char *s, size_t size, char ret[static NVML_PCI_ADDRESS_MAX]) {
        /* DDDDDDDD:BB:DD.F or DDDD:BB:DD.F: the domain's extra leading digits must be 0. */
        size_t len = strnlen(s, size), skip;

        if (len == 16)
                skip = 4;
        else if (len == 12)
                skip = 0;
        else
                return -EINVAL;
        for (size_t i = 0; i < skip; i++)
                if (s[i] != '0')
                        return -EINVAL;
        s += skip;
        for (size_t i = 0; i < 12; i++) {
                bool sep = i == 4 || i == 7 || i == 10;

                if (sep) {
                        if (s[i] != (i == 10 ? '.' : ':'))
                                return -EINVAL;
                        ret[i] = s[i];
                } else {
                        int v = hex_value(s[i]);

                        if (v < 0 || (i == 11 && v > 7))
                                return -EINVAL;
                        ret[i] = "0123456789abcdef"[v];
                }
        }
        /* The device number is 5 bits: at most 1f. */
        if (hex_value(s[8]) > 1)
                return -EINVAL;
        ret[12] = '\0';
        return 0;
}

int nvml_open(const char *path, Nvml **ret, char **ret_error) {
        _cleanup_(nvml_closep) Nvml *n = NULL;
        nvmlReturn_t r;

        assert(ret);
        if (!path)
                path = getenv(NVML_LIBRARY_ENV);
        if (!path || !*path)
                path = NVML_LIBRARY_DEFAULT;

        n = calloc(1, sizeof *n);
        if (!n)
                return -ENOMEM;
        n->path = strdup(path);
        if (!n->path)
                return -ENOMEM;
        /* RTLD_LOCAL: NVML's symbols (and a fake's) stay out of the global scope. */
        n->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!n->dl) {
                const char *e = dlerror();

                if (ret_error && asprintf(ret_error, "%s not found: %s", path, e ?: "dlopen failed") < 0)
                        *ret_error = NULL;
                return -ENOENT;
        }
#define NVML_SYM(required, name, ret_t, args)                                                      \
        *(void **) &n->name = dlsym(n->dl, #name);                                                 \
        if (!n->name && (required)) {                                                              \
                if (ret_error && asprintf(ret_error, "%s lacks %s", path, #name) < 0)              \
                        *ret_error = NULL;                                                         \
                return -ENOSYS;                                                                    \
        }
        NVML_CALLS(NVML_SYM)
#undef NVML_SYM

        r = n->nvmlInit_v2();
        if (r != NVML_SUCCESS) {
                int err = fail(n, -EIO, ret_error, "nvmlInit", r);

                /* Not initialised: close without nvmlShutdown. */
                n->nvmlShutdown = NULL;
                return err;
        }
        *ret = TAKE_PTR(n);
        return 0;
}

Nvml *nvml_close(Nvml *n) {
        if (!n)
                return NULL;
        if (n->dl) {
                if (n->nvmlShutdown)
                        (void) n->nvmlShutdown();
                dlclose(n->dl);
        }
        free(n->path);
        free(n);
        return NULL;
}

const char *nvml_path(const Nvml *n) {
        return n ? n->path : NULL;
}

int nvml_count(Nvml *n, unsigned *ret, char **ret_error) {
        unsigned count = 0;
        nvmlReturn_t r;

        assert(n && ret);
        r = n->nvmlDeviceGetCount_v2(&count);
        if (r != NVML_SUCCESS)
                return fail(n, -EIO, ret_error, "nvmlDeviceGetCount", r);
        *ret = count;
        return 0;
}

static int handle(Nvml *n, unsigned index, nvmlDevice_t *ret, char **ret_error) {
        nvmlReturn_t r = n->nvmlDeviceGetHandleByIndex_v2(index, ret);

        if (r != NVML_SUCCESS)
                return fail(n, -EIO, ret_error, "nvmlDeviceGetHandleByIndex", r);
        return 0;
}

int nvml_gpu_info(Nvml *n, unsigned index, NvmlGpuInfo *ret, char **ret_error) {
        NvmlGpuInfo info = { .numa_node = -1, .mig_mode = -1 };
        char buf[NVML_UUID_MAX > NVML_NAME_MAX ? NVML_UUID_MAX : NVML_NAME_MAX];
        nvmlDevice_t d;
        nvmlReturn_t r;
        int k;

        assert(n && ret);
        k = handle(n, index, &d, ret_error);
        if (k < 0)
                return k;

        memset(buf, 0, sizeof buf);
        r = n->nvmlDeviceGetUUID(d, buf, sizeof buf);
        if (r != NVML_SUCCESS)
                return fail(n, -EIO, ret_error, "nvmlDeviceGetUUID", r);
        nvml_string_copy(info.uuid, sizeof info.uuid, buf, sizeof buf);
        if (!info.uuid[0])
                return fail(n, -EIO, ret_error, "nvmlDeviceGetUUID", 0);

        memset(buf, 0, sizeof buf);
        if (n->nvmlDeviceGetName && n->nvmlDeviceGetName(d, buf, sizeof buf) == NVML_SUCCESS)
                nvml_string_copy(info.name, sizeof info.name, buf, sizeof buf);

        nvmlMemory_t mem = {};
        if (n->nvmlDeviceGetMemoryInfo && n->nvmlDeviceGetMemoryInfo(d, &mem) == NVML_SUCCESS)
                info.memory_total = mem.total;

        nvmlPciInfo_t pci = {};
        if (n->nvmlDeviceGetPciInfo_v3 && n->nvmlDeviceGetPciInfo_v3(d, &pci) == NVML_SUCCESS &&
            nvml_pci_address_normalize(pci.busId, sizeof pci.busId, info.pci_address) < 0)
                info.pci_address[0] = '\0';

        unsigned node;
        if (n->nvmlDeviceGetNumaNodeId && n->nvmlDeviceGetNumaNodeId(d, &node) == NVML_SUCCESS &&
            node < 4096)
                info.numa_node = (int) node;

        unsigned current, pending;
        if (n->nvmlDeviceGetMigMode && n->nvmlDeviceGetMigMode(d, &current, &pending) == NVML_SUCCESS)
                info.mig_mode = current != 0;

        /* As many words as a CpuSet has room for: a larger machine's extra CPUs are not
         * asked about. */
        unsigned long mask[CPU_SET_MAX / (8 * sizeof(unsigned long))] = {};
        if (n->nvmlDeviceGetCpuAffinity &&
            n->nvmlDeviceGetCpuAffinity(d, ELEMENTSOF(mask), mask) == NVML_SUCCESS)
                for (size_t w = 0; w < ELEMENTSOF(mask); w++)
                        for (unsigned b = 0; mask[w] >> b && b < 8 * sizeof(unsigned long); b++)
                                if ((mask[w] >> b) & 1)
                                        cpu_set_add(&info.cpus, (unsigned) (w * 8 * sizeof(unsigned long) + b));

        nvlinks(n, d, &info);
        if (info.mig_mode > 0)
                migs(n, d, &info);
        *ret = info;
        return 0;
}

void nvml_mig_profile(const char *name, char ret[static NVML_MIG_PROFILE_MAX]) {
        const char *p = strstr(name, " MIG ");

        ret[0] = '\0';
        if (p)
                nvml_string_copy(ret, NVML_MIG_PROFILE_MAX, p + 5, NVML_MIG_PROFILE_MAX - 1);
}

/* The MIG devices of d (in MIG mode): NVML's slots up to its maximum, the empty ones
 * skipped; each with its UUID, else not listed. */
static void migs(Nvml *n, nvmlDevice_t d, NvmlGpuInfo *info) {
        unsigned max = 0;

        if (!n->nvmlDeviceGetMaxMigDeviceCount || !n->nvmlDeviceGetMigDeviceHandleByIndex ||
            n->nvmlDeviceGetMaxMigDeviceCount(d, &max) != NVML_SUCCESS)
                return;
        for (unsigned i = 0; i < max && info->n_mig < NVML_MIG_MAX; i++) {
                NvmlMigInfo *m = &info->mig[info->n_mig];
                char buf[NVML_UUID_MAX > NVML_NAME_MAX ? NVML_UUID_MAX : NVML_NAME_MAX], name[NVML_NAME_MAX];
                nvmlMemory_t mem = {};
                nvmlDevice_t h;

                if (n->nvmlDeviceGetMigDeviceHandleByIndex(d, i, &h) != NVML_SUCCESS)
                        continue;
                *m = (NvmlMigInfo) {};
                memset(buf, 0, sizeof buf);
                if (n->nvmlDeviceGetUUID(h, buf, sizeof buf) != NVML_SUCCESS)
                        continue;
                nvml_string_copy(m->uuid, sizeof m->uuid, buf, sizeof buf);
                if (!m->uuid[0])
                        continue;
                memset(buf, 0, sizeof buf);
                if (n->nvmlDeviceGetName && n->nvmlDeviceGetName(h, buf, sizeof buf) == NVML_SUCCESS) {
                        nvml_string_copy(name, sizeof name, buf, sizeof buf);
                        nvml_mig_profile(name, m->profile);
                }
                if (n->nvmlDeviceGetGpuInstanceId)
                        (void) n->nvmlDeviceGetGpuInstanceId(h, &m->gpu_instance);
                if (n->nvmlDeviceGetComputeInstanceId)
                        (void) n->nvmlDeviceGetComputeInstanceId(h, &m->compute_instance);
                if (n->nvmlDeviceGetMemoryInfo && n->nvmlDeviceGetMemoryInfo(h, &mem) == NVML_SUCCESS)
                        m->memory_total = mem.total;
                info->n_mig++;
        }
}

/* Each active link's other end, counted by device. A GPU without NVLink answers
 * NOT_SUPPORTED for link 0; past its last link NVML answers INVALID_ARGUMENT. */
static void nvlinks(Nvml *n, nvmlDevice_t d, NvmlGpuInfo *info) {
        if (!n->nvmlDeviceGetNvLinkState || !n->nvmlDeviceGetNvLinkRemotePciInfo_v2)
                return;
        for (unsigned link = 0; link < NVML_NVLINK_LINKS_MAX; link++) {
                char addr[NVML_PCI_ADDRESS_MAX];
                nvmlPciInfo_t pci = {};
                int active = 0;
                size_t k;

                if (n->nvmlDeviceGetNvLinkState(d, link, &active) != NVML_SUCCESS)
                        break;
                info->nvlink_supported = true;
                if (!active || n->nvmlDeviceGetNvLinkRemotePciInfo_v2(d, link, &pci) != NVML_SUCCESS ||
                    nvml_pci_address_normalize(pci.busId, sizeof pci.busId, addr) < 0)
                        continue;
                for (k = 0; k < info->n_nvlink; k++)
                        if (strcmp(info->nvlink[k].pci_address, addr) == 0)
                                break;
                if (k == info->n_nvlink) {
                        memcpy(info->nvlink[k].pci_address, addr, sizeof addr);
                        info->n_nvlink++;
                }
                info->nvlink[k].links++;
        }
}

static void sample_processes(Nvml *n, nvmlDevice_t d, NvmlGpuSample *s) {
        _cleanup_free_ nvmlProcessInfo_t *infos = NULL;
        unsigned count = NVML_PROCESSES_MAX;
        nvmlReturn_t r;

        if (!n->nvmlDeviceGetComputeRunningProcesses_v3)
                return;
        /* Asked with room for NVML_PROCESSES_MAX; more, NVML says how many, asked again once
         * with room for them (bounded). */
        for (int attempt = 0; attempt < 2; attempt++) {
                nvmlProcessInfo_t *p = reallocarray(infos, count ?: 1, sizeof *infos);

                if (!p)
                        return;
                infos = p;
                unsigned asked = count;
                r = n->nvmlDeviceGetComputeRunningProcesses_v3(d, &count, infos);
                if (r == NVML_SUCCESS) {
                        count = MIN(count, asked);
                        break;
                }
                if (r != NVML_ERROR_INSUFFICIENT_SIZE || count <= asked)
                        return;
                s->n_processes_total = count;
                if (count > NVML_PROCESSES_ASK_MAX)
                        return;
        }
        if (r != NVML_SUCCESS)
                return;
        s->n_processes_total = count;
        for (unsigned i = 0; i < count && s->n_processes < NVML_PROCESSES_MAX; i++)
                s->processes[s->n_processes++] = (NvmlProcess) {
                        .pid = infos[i].pid,
                        .memory_used = infos[i].usedGpuMemory,
                };
}

int nvml_gpu_sample(Nvml *n, unsigned index, NvmlGpuSample *ret, char **ret_error) {
        nvmlDevice_t d;
        int k;

        assert(n && ret);
        *ret = (NvmlGpuSample) {
                .utilization = -1,
                .memory_utilization = -1,
                .memory_used = UINT64_MAX,
                .energy_mj = UINT64_MAX,
                .power_mw = -1,
                .temperature = -1,
                .n_processes_total = SIZE_MAX,
        };
        k = handle(n, index, &d, ret_error);
        if (k < 0)
                return k;

        nvmlUtilization_t u;
        if (n->nvmlDeviceGetUtilizationRates && n->nvmlDeviceGetUtilizationRates(d, &u) == NVML_SUCCESS) {
                ret->utilization = (int) MIN(u.gpu, 100U);
                ret->memory_utilization = (int) MIN(u.memory, 100U);
        }
        nvmlMemory_t mem;
        if (n->nvmlDeviceGetMemoryInfo && n->nvmlDeviceGetMemoryInfo(d, &mem) == NVML_SUCCESS)
                ret->memory_used = mem.used;
        unsigned long long energy;
        if (n->nvmlDeviceGetTotalEnergyConsumption &&
            n->nvmlDeviceGetTotalEnergyConsumption(d, &energy) == NVML_SUCCESS &&
            energy != NVML_VALUE_NOT_AVAILABLE_ULL)
                ret->energy_mj = energy;
        unsigned power;
        if (n->nvmlDeviceGetPowerUsage && n->nvmlDeviceGetPowerUsage(d, &power) == NVML_SUCCESS)
                ret->power_mw = power;
        unsigned temp;
        if (n->nvmlDeviceGetTemperature &&
            n->nvmlDeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &temp) == NVML_SUCCESS && temp < 1000)
                ret->temperature = (int) temp;
        sample_processes(n, d, ret);
        return 0;
}
