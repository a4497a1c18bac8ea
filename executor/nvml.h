/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* NVIDIA's management library (NVML), loaded at run time: nothing links against
 * libnvidia-ml.so.1 and no package depends on it. Where the driver ships it, it gives what
 * procfs and sysfs do not: each GPU's utilisation, memory in use, energy counter, power,
 * temperature and the processes using it; and a second source for discovery's UUID,
 * model, memory, PCI address and NUMA node.
 *
 * Every call here may block for as long as the driver takes (a wedged GPU: forever), so
 * corrald makes them on a thread of its own (daemon/gpu-telemetry.c), never on its loop.
 * The types NVML's calls take are declared in nvml.c after NVIDIA's public nvml.h; the
 * strings NVML hands back are cut at their buffer's end and kept to printable ASCII. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpuset.h"
#include "macro.h"

/* The library dlopen()ed when neither the caller nor $CORRAL_NVML_LIBRARY names one. */
#define NVML_LIBRARY_DEFAULT "libnvidia-ml.so.1"
#define NVML_LIBRARY_ENV "CORRAL_NVML_LIBRARY"

#define NVML_UUID_MAX 96       /* NVML_DEVICE_UUID_V2_BUFFER_SIZE */
#define NVML_NAME_MAX 96       /* NVML_DEVICE_NAME_V2_BUFFER_SIZE */
#define NVML_PCI_ADDRESS_MAX 13 /* "0000:3b:00.0" and its NUL */
#define NVML_PROCESSES_MAX 64  /* per GPU per sample: more are counted, not listed */

typedef struct Nvml Nvml;

#define NVML_NVLINK_LINKS_MAX 18 /* NVML_NVLINK_MAX_LINKS */

/* One device at the other end of a GPU's active NVLinks: another GPU, or an NVSwitch
 * (whose GPUs are then all linked through it). */
typedef struct NvmlLinkPeer {
        char pci_address[NVML_PCI_ADDRESS_MAX]; /* sysfs's form */
        unsigned links;                      /* how many of the GPU's links go there */
} NvmlLinkPeer;

#define NVML_MIG_MAX 8 /* MIG devices read per GPU (7 on an A100 or H100) */
#define NVML_MIG_PROFILE_MAX 32

/* A MIG device (a compute instance in a GPU instance) of a GPU in MIG mode. */
typedef struct NvmlMigInfo {
        char uuid[NVML_UUID_MAX];            /* "MIG-..." */
        char profile[NVML_MIG_PROFILE_MAX];  /* as nvidia-smi and Slurm spell it: "1g.10gb"; "": unknown */
        unsigned gpu_instance, compute_instance;
        uint64_t memory_total;               /* bytes; 0: unknown */
} NvmlMigInfo;

/* What NVML says a GPU is. Fields NVML does not give are empty, -1 or 0. */
typedef struct NvmlGpuInfo {
        char uuid[NVML_UUID_MAX];            /* "GPU-5e7c9a3c-..." */
        char name[NVML_NAME_MAX];            /* "NVIDIA A100-SXM4-40GB" */
        char pci_address[NVML_PCI_ADDRESS_MAX]; /* sysfs's form, "0000:3b:00.0" */
        uint64_t memory_total;               /* bytes; 0: unknown */
        int numa_node;                       /* -1: unknown or none */
        int mig_mode;                        /* 1: MIG on, 0: off, -1: not supported */
        CpuSet cpus;                         /* the CPUs near it (its affinity); empty: unknown */
        /* Its active NVLinks by the device at their other end; nvlink_supported false: the
         * GPU has none (or NVML does not say). */
        bool nvlink_supported;
        NvmlLinkPeer nvlink[NVML_NVLINK_LINKS_MAX];
        size_t n_nvlink;
        /* In MIG mode: its MIG devices, in NVML's order (read, not changed: Corral never
         * changes MIG mode or the layout). */
        NvmlMigInfo mig[NVML_MIG_MAX];
        size_t n_mig;
} NvmlGpuInfo;

typedef struct NvmlProcess {
        uint32_t pid;
        uint64_t memory_used;                /* bytes; UINT64_MAX: NVML does not say */
        /* Not NVML's: what /proc says of the pid, filled on the telemetry thread
         * (daemon/gpu-procs.c). owner_known false: not read, or the process was gone. */
        bool owner_known;
        uint32_t uid;                        /* the owner of /proc/PID */
        uint64_t job_id;                     /* its cgroup's corral-job-N.scope; 0: none */
} NvmlProcess;

/* One reading of a GPU's counters. A figure NVML does not give is -1 or UINT64_MAX. */
typedef struct NvmlGpuSample {
        int utilization;                     /* percent of the last sample period the GPU ran a kernel */
        int memory_utilization;              /* percent of it memory was read or written */
        uint64_t memory_used;                /* bytes */
        uint64_t energy_mj;                  /* millijoules since the driver loaded */
        int64_t power_mw;                    /* milliwatts; -1: unknown */
        int temperature;                     /* degrees C; -1: unknown */
        NvmlProcess processes[NVML_PROCESSES_MAX];
        size_t n_processes;                  /* listed */
        size_t n_processes_total;            /* as NVML counts them; -1 (SIZE_MAX): unknown */
} NvmlGpuSample;

/* Loads path (NULL: $CORRAL_NVML_LIBRARY, else NVML_LIBRARY_DEFAULT) and initialises NVML.
 * -ENOENT when the library cannot be loaded, -ENOSYS when it lacks a call Corral needs,
 * -EIO when nvmlInit fails; each with why in *ret_error ("libnvidia-ml.so.1 not found: ...",
 * "nvmlInit failed: Driver Not Loaded"). -ENOMEM. */
int nvml_open(const char *path, Nvml **ret, char **ret_error);
/* nvmlShutdown and dlclose. Must not be called while another thread is in a call. */
Nvml *nvml_close(Nvml *n);
DEFINE_TRIVIAL_CLEANUP_FUNC(Nvml *, nvml_close);

/* The library's path as it was loaded. */
const char *nvml_path(const Nvml *n) _pure_;

/* The number of GPUs NVML sees. -EIO with why in *ret_error. */
int nvml_count(Nvml *n, unsigned *ret, char **ret_error);
/* GPU index (NVML's order, not Corral's): -EIO (with why) when NVML gives no handle or no
 * UUID; the other fields are best effort. */
int nvml_gpu_info(Nvml *n, unsigned index, NvmlGpuInfo *ret, char **ret_error);
/* The GPU's counters now: -EIO (with why) when NVML gives no handle for it; each counter
 * NVML refuses is left unknown. */
int nvml_gpu_sample(Nvml *n, unsigned index, NvmlGpuSample *ret, char **ret_error);

/* NVML's PCI bus id ("00000000:3B:00.0", its domain 8 or 4 hex digits) in sysfs's form
 * ("0000:3b:00.0"): -EINVAL for anything else. Reads at most size bytes of s. */
int nvml_pci_address_normalize(const char *s, size_t size, char ret[static NVML_PCI_ADDRESS_MAX]);
/* Copies at most size bytes of src, up to its NUL, into dst (dst_size > 0) with every byte
 * that is not printable ASCII as '?'; always NUL-terminated. */
void nvml_string_copy(char *dst, size_t dst_size, const char *src, size_t size);
/* The MIG profile in a MIG device's name ("NVIDIA A100-SXM4-40GB MIG 1g.10gb" gives
 * "1g.10gb"), "" when the name has none. */
void nvml_mig_profile(const char *name, char ret[static NVML_MIG_PROFILE_MAX]);
