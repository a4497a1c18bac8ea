/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A fake libnvidia-ml.so.1 for the tests of a machine without NVIDIA GPUs: it exports the
 * NVML calls Corral makes (executor/nvml.c), and serves what the text file
 * $FAKE_NVML_CONFIG says, read again on every call so that a test may rewrite it while
 * jobs run (write a new file and rename it over the old). Lines:
 *
 *   init-error CODE        nvmlInit_v2 returns CODE (an nvmlReturn_t)
 *   wedge                  every device call blocks, as a wedged driver's does, until the
 *                          file no longer says so
 *   gpu KEY=VALUE...       the next GPU (index 0, 1, ...): uuid=, pci= (NVML's bus id),
 *                          memory= (total bytes), used= (bytes), util=, memutil= (percent),
 *                          energy= (mJ), power= (mW), temp=, numa=, mig=, cpus= (a
 *                          cpulist: the CPUs near it), and name=,
 *                          which takes the rest of the line; a key left out: NOT_SUPPORTED
 *   proc GPU PID BYTES     a compute process on GPU (its index)
 *   mig GPU GI CI UUID BYTES NAME
 *                          a MIG device of GPU (in MIG mode: mig=1): its GPU and compute
 *                          instance ids, UUID ("MIG-..."), memory, and name (the rest of the
 *                          line, "NVIDIA A100-SXM4-40GB MIG 1g.10gb"), at the next MIG index
 *   nvlink GPU LINK PCI    GPU's NVLink LINK (0..17) is active, to the device at PCI
 *                          (NVML's bus id: a GPU's, or an NVSwitch's); a GPU with no such
 *                          line has no NVLink (NOT_SUPPORTED)
 *
 * Test code: the file is the test's own, and a line it cannot read is ignored. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

enum {
        NVML_SUCCESS = 0,
        NVML_ERROR_UNINITIALIZED = 1,
        NVML_ERROR_INVALID_ARGUMENT = 2,
        NVML_ERROR_NOT_SUPPORTED = 3,
        NVML_ERROR_NOT_FOUND = 6,
        NVML_ERROR_INSUFFICIENT_SIZE = 7,
        NVML_ERROR_DRIVER_NOT_LOADED = 9,
        NVML_ERROR_GPU_IS_LOST = 15,
        NVML_ERROR_UNKNOWN = 999,
};

typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct {
        char busIdLegacy[16];
        unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
        char busId[32];
} nvmlPciInfo_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct {
        unsigned int pid;
        unsigned long long usedGpuMemory;
        unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

#define FAKE_GPUS_MAX 16
#define FAKE_PROCS_MAX 256
#define UNSET (~0ULL)

typedef struct FakeGpu {
        char uuid[96], pci[32], name[96], cpus[256];
        unsigned long long memory, used, util, memutil, energy, power, temp, numa, mig;
        /* A MIG device's: its GPU (index) and instance ids. */
        unsigned parent, gi, ci;
} FakeGpu;

#define FAKE_MIGS_MAX 32
#define FAKE_MIG_PER_GPU 7 /* nvmlDeviceGetMaxMigDeviceCount on an A100 or H100 */
#define FAKE_MIG_HANDLE 0x10000UL

typedef struct FakeProc {
        unsigned gpu, pid;
        unsigned long long memory;
} FakeProc;

#define FAKE_LINKS_MAX 18 /* NVML_NVLINK_MAX_LINKS */

typedef struct FakeLink {
        unsigned gpu, link;
        char pci[32];
} FakeLink;

typedef struct Fake {
        int init_error;
        FakeLink links[FAKE_GPUS_MAX * FAKE_LINKS_MAX];
        unsigned n_links;
        FakeGpu migs[FAKE_MIGS_MAX];
        unsigned n_migs;
        bool wedge;
        FakeGpu gpus[FAKE_GPUS_MAX];
        unsigned n_gpus;
        FakeProc procs[FAKE_PROCS_MAX];
        unsigned n_procs;
} Fake;

static int initialized;

static void load(Fake *f) {
        const char *path = getenv("FAKE_NVML_CONFIG");
        char line[512];
        FILE *file;

        memset(f, 0, sizeof *f);
        if (!path || !(file = fopen(path, "re")))
                return;
        while (fgets(line, sizeof line, file)) {
                line[strcspn(line, "\n")] = '\0';
                if (strncmp(line, "init-error ", 11) == 0)
                        f->init_error = atoi(line + 11);
                else if (strcmp(line, "wedge") == 0)
                        f->wedge = true;
                else if (strncmp(line, "mig ", 4) == 0 && f->n_migs < FAKE_MIGS_MAX) {
                        FakeGpu *g = &f->migs[f->n_migs];
                        int used = 0;

                        memset(g, 0, sizeof *g);
                        g->used = g->util = g->memutil = g->energy = g->power = g->temp = g->numa = g->mig = UNSET;
                        if (sscanf(line + 4, "%u %u %u %95s %llu %n", &g->parent, &g->gi, &g->ci, g->uuid, &g->memory,
                                   &used) == 5 && used > 0) {
                                snprintf(g->name, sizeof g->name, "%s", line + 4 + used);
                                f->n_migs++;
                        }
                } else if (strncmp(line, "nvlink ", 7) == 0 && f->n_links < FAKE_GPUS_MAX * FAKE_LINKS_MAX) {
                        FakeLink *l = &f->links[f->n_links];

                        if (sscanf(line + 7, "%u %u %31s", &l->gpu, &l->link, l->pci) == 3 &&
                            l->link < FAKE_LINKS_MAX)
                                f->n_links++;
                } else if (strncmp(line, "proc ", 5) == 0 && f->n_procs < FAKE_PROCS_MAX) {
                        FakeProc *p = &f->procs[f->n_procs];

                        if (sscanf(line + 5, "%u %u %llu", &p->gpu, &p->pid, &p->memory) == 3)
                                f->n_procs++;
                } else if (strncmp(line, "gpu ", 4) == 0 && f->n_gpus < FAKE_GPUS_MAX) {
                        FakeGpu *g = &f->gpus[f->n_gpus++];
                        char *s = line + 4;

                        g->memory = g->used = g->util = g->memutil = g->energy = g->power =
                                g->temp = g->numa = g->mig = UNSET;
                        while (*s) {
                                char *key = s, *eq, *end;

                                s += strspn(s, " ");
                                key = s;
                                if (strncmp(key, "name=", 5) == 0) {
                                        snprintf(g->name, sizeof g->name, "%s", key + 5);
                                        break;
                                }
                                end = key + strcspn(key, " ");
                                if (*end)
                                        *end++ = '\0';
                                s = end;
                                eq = strchr(key, '=');
                                if (!eq)
                                        continue;
                                *eq++ = '\0';
#define NUM(k) else if (strcmp(key, #k) == 0) g->k = strtoull(eq, NULL, 0)
                                if (strcmp(key, "uuid") == 0)
                                        snprintf(g->uuid, sizeof g->uuid, "%s", eq);
                                else if (strcmp(key, "pci") == 0)
                                        snprintf(g->pci, sizeof g->pci, "%s", eq);
                                else if (strcmp(key, "cpus") == 0)
                                        snprintf(g->cpus, sizeof g->cpus, "%s", eq);
                                NUM(memory); NUM(used); NUM(util); NUM(memutil); NUM(energy);
                                NUM(power); NUM(temp); NUM(numa); NUM(mig);
#undef NUM
                        }
                }
        }
        fclose(file);
}

/* The device a handle names, with the file read now; blocks forever when it says wedge. */
static nvmlReturn_t device(nvmlDevice_t d, Fake *f, FakeGpu **ret) {
        unsigned long index = (unsigned long) d;

        load(f);
        while (f->wedge) {
                usleep(10000);
                load(f);
        }
        if (!initialized)
                return NVML_ERROR_UNINITIALIZED;
        if (index > FAKE_MIG_HANDLE) {
                /* A MIG device's handle: the handle's bits past FAKE_MIG_HANDLE, its row. */
                if (index - FAKE_MIG_HANDLE > f->n_migs)
                        return NVML_ERROR_GPU_IS_LOST;
                *ret = &f->migs[index - FAKE_MIG_HANDLE - 1];
                return NVML_SUCCESS;
        }
        if (index == 0 || index > f->n_gpus)
                return NVML_ERROR_GPU_IS_LOST;
        *ret = &f->gpus[index - 1];
        return NVML_SUCCESS;
}

static bool is_mig(const Fake *f, const FakeGpu *g) {
        return g >= f->migs && g < f->migs + FAKE_MIGS_MAX;
}

#define DEVICE(d)                                                                          \
        Fake _f;                                                                           \
        FakeGpu *g;                                                                        \
        nvmlReturn_t _r = device(d, &_f, &g);                                              \
        if (_r != NVML_SUCCESS)                                                            \
                return _r

EXPORT nvmlReturn_t nvmlInit_v2(void) {
        Fake f;

        load(&f);
        if (f.init_error)
                return f.init_error;
        initialized++;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlShutdown(void) {
        if (!initialized)
                return NVML_ERROR_UNINITIALIZED;
        initialized--;
        return NVML_SUCCESS;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t r) {
        switch (r) {
        case NVML_SUCCESS: return "Success";
        case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
        case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
        case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
        case NVML_ERROR_NOT_FOUND: return "Not Found";
        case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
        case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
        case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
        default: return "Unknown Error";
        }
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
        Fake f;

        load(&f);
        while (f.wedge) {
                usleep(10000);
                load(&f);
        }
        if (!initialized)
                return NVML_ERROR_UNINITIALIZED;
        *count = f.n_gpus;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *d) {
        Fake f;

        load(&f);
        while (f.wedge) {
                usleep(10000);
                load(&f);
        }
        if (!initialized)
                return NVML_ERROR_UNINITIALIZED;
        if (index >= f.n_gpus)
                return NVML_ERROR_INVALID_ARGUMENT;
        *d = (nvmlDevice_t) (unsigned long) (index + 1);
        return NVML_SUCCESS;
}

static nvmlReturn_t copy_string(char *buf, unsigned length, const char *s) {
        if (!*s)
                return NVML_ERROR_NOT_SUPPORTED;
        if (strlen(s) >= length)
                return NVML_ERROR_INSUFFICIENT_SIZE;
        strcpy(buf, s);
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int length) {
        DEVICE(d);
        return copy_string(uuid, length, g->uuid);
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int length) {
        DEVICE(d);
        return copy_string(name, length, g->name);
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m) {
        DEVICE(d);
        if (g->memory == UNSET)
                return NVML_ERROR_NOT_SUPPORTED;
        m->total = g->memory;
        m->used = g->used == UNSET ? 0 : g->used;
        m->free = m->total > m->used ? m->total - m->used : 0;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p) {
        DEVICE(d);
        if (!g->pci[0])
                return NVML_ERROR_NOT_SUPPORTED;
        memset(p, 0, sizeof *p);
        snprintf(p->busId, sizeof p->busId, "%s", g->pci);
        /* The legacy field holds 16 bytes: cut, as the driver does. */
        snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "%.15s", g->pci);
        return NVML_SUCCESS;
}

/* Link link of GPU gpu: NOT_SUPPORTED where the GPU has no NVLink line at all,
 * INVALID_ARGUMENT past NVML's last link, else SUCCESS with the line (NULL: inactive). */
static nvmlReturn_t fake_link(const Fake *f, unsigned gpu, unsigned link, const FakeLink **ret) {
        bool any = false;

        *ret = NULL;
        for (unsigned i = 0; i < f->n_links; i++)
                if (f->links[i].gpu == gpu) {
                        any = true;
                        if (f->links[i].link == link)
                                *ret = &f->links[i];
                }
        if (!any)
                return NVML_ERROR_NOT_SUPPORTED;
        return link < FAKE_LINKS_MAX ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned int link, int *active) {
        const FakeLink *l;
        DEVICE(d);
        nvmlReturn_t r = fake_link(&_f, (unsigned) (g - _f.gpus), link, &l);

        if (r == NVML_SUCCESS)
                *active = l != NULL;
        return r;
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned int link, nvmlPciInfo_t *p) {
        const FakeLink *l;
        DEVICE(d);
        nvmlReturn_t r = fake_link(&_f, (unsigned) (g - _f.gpus), link, &l);

        if (r != NVML_SUCCESS)
                return r;
        if (!l)
                return NVML_ERROR_NOT_SUPPORTED;
        memset(p, 0, sizeof *p);
        snprintf(p->busId, sizeof p->busId, "%s", l->pci);
        snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "%.15s", l->pci);
        return NVML_SUCCESS;
}

#define UINT_GETTER(fn, field)                                                             \
        EXPORT nvmlReturn_t fn(nvmlDevice_t d, unsigned int *v) {                          \
                DEVICE(d);                                                                 \
                if (g->field == UNSET)                                                     \
                        return NVML_ERROR_NOT_SUPPORTED;                                   \
                *v = (unsigned) g->field;                                                  \
                return NVML_SUCCESS;                                                       \
        }
UINT_GETTER(nvmlDeviceGetNumaNodeId, numa)
UINT_GETTER(nvmlDeviceGetPowerUsage, power)

EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int *count) {
        DEVICE(d);
        if (is_mig(&_f, g) || g->mig == UNSET)
                return NVML_ERROR_NOT_SUPPORTED;
        *count = FAKE_MIG_PER_GPU;
        return NVML_SUCCESS;
}

/* The index-th MIG device of d, in the order the file lists them (NOT_FOUND: none there). */
EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int index, nvmlDevice_t *mig) {
        unsigned seen = 0, gpu;
        DEVICE(d);
        if (is_mig(&_f, g) || g->mig == UNSET)
                return NVML_ERROR_NOT_SUPPORTED;
        if (index >= FAKE_MIG_PER_GPU)
                return NVML_ERROR_INVALID_ARGUMENT;
        gpu = (unsigned) (g - _f.gpus);
        for (unsigned i = 0; i < _f.n_migs; i++)
                if (_f.migs[i].parent == gpu && seen++ == index) {
                        *mig = (nvmlDevice_t) (FAKE_MIG_HANDLE + i + 1);
                        return NVML_SUCCESS;
                }
        return NVML_ERROR_NOT_FOUND;
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned int *id) {
        DEVICE(d);
        if (!is_mig(&_f, g))
                return NVML_ERROR_INVALID_ARGUMENT;
        *id = g->gi;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t d, unsigned int *id) {
        DEVICE(d);
        if (!is_mig(&_f, g))
                return NVML_ERROR_INVALID_ARGUMENT;
        *id = g->ci;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *current, unsigned int *pending) {
        DEVICE(d);
        if (g->mig == UNSET)
                return NVML_ERROR_NOT_SUPPORTED;
        *current = *pending = (unsigned) g->mig;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) {
        DEVICE(d);
        if (g->util == UNSET)
                return NVML_ERROR_NOT_SUPPORTED;
        u->gpu = (unsigned) g->util;
        u->memory = g->memutil == UNSET ? 0 : (unsigned) g->memutil;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *e) {
        DEVICE(d);
        if (g->energy == UNSET)
                return NVML_ERROR_NOT_SUPPORTED;
        *e = g->energy;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *t) {
        DEVICE(d);
        if (sensor != 0 || g->temp == UNSET)
                return NVML_ERROR_NOT_SUPPORTED;
        *t = (unsigned) g->temp;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *count,
                                                            nvmlProcessInfo_t *infos) {
        unsigned n = 0, index;

        DEVICE(d);
        index = (unsigned) (g - _f.gpus);
        for (unsigned i = 0; i < _f.n_procs; i++)
                n += _f.procs[i].gpu == index;
        if (n > *count || (n > 0 && !infos)) {
                *count = n;
                return NVML_ERROR_INSUFFICIENT_SIZE;
        }
        *count = 0;
        for (unsigned i = 0; i < _f.n_procs; i++)
                if (_f.procs[i].gpu == index)
                        infos[(*count)++] = (nvmlProcessInfo_t) {
                                .pid = _f.procs[i].pid,
                                .usedGpuMemory = _f.procs[i].memory,
                        };
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t d, unsigned int size, unsigned long *set) {
        const unsigned bits = 8 * sizeof(unsigned long);
        char *p;

        DEVICE(d);
        if (!g->cpus[0])
                return NVML_ERROR_NOT_SUPPORTED;
        memset(set, 0, size * sizeof *set);
        p = g->cpus;
        while (*p) {
                unsigned long a = strtoul(p, &p, 10), b = a;

                if (*p == '-')
                        b = strtoul(p + 1, &p, 10);
                for (unsigned long c = a; c <= b && c < (unsigned long) size * bits; c++)
                        set[c / bits] |= 1UL << (c % bits);
                if (*p == ',')
                        p++;
                else if (*p)
                        return NVML_ERROR_UNKNOWN;
        }
        return NVML_SUCCESS;
}
