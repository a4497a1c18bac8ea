/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The machine's devices as GetInfo reports them ("devices": [DeviceInfo]), for `corral
 * info` and sinfo's GRES column: one row each, in the daemon's order, so the position is
 * the GPU index that JobInfo.gpus_allocated and the job's environment use. */

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/* A job holding some of a shared GPU's shards. */
typedef struct DeviceShardHolder {
        uint64_t job_id;
        char *user;
        uint32_t shards;
} DeviceShardHolder;

typedef struct DeviceInfo {
        uint32_t index;         /* the GPU index on this machine */
        char *name;             /* "gpu0" */
        char *vendor;           /* "nvidia", "amd", "other" */
        char *model;            /* NULL: unknown */
        char *pci_address;      /* NULL: none or unknown */
        char *uuid;             /* NVIDIA's "GPU-..."; NULL: none */
        char *offline;          /* why it is given to nobody ("gone"); NULL: scheduled */
        int numa_node;          /* the kernel's node number; -1: unknown */
        char **features;        /* what --constraint and --gres=gpu:TYPE match, besides name and model */
        uint64_t job_id;        /* the job holding it; 0: free */
        char *user;             /* that job's user */
        /* Slurm's shards: how many it has (0: not shared), how many jobs hold, and which
         * (at most CORRAL_SHARDS_MAX of them). */
        uint32_t shards, shards_used;
        DeviceShardHolder *shard_holders;
        size_t n_shard_holders;
        /* MIG: a GPU in MIG mode (given to no job whole), or a MIG device of the GPU named
         * mig_of (GPU instance mig_gi, compute instance mig_ci), its profile ("1g.10gb")
         * and NVML's UUID for it once read; memory in bytes, 0: unknown. */
        bool mig_mode;
        char *mig_of;
        uint32_t mig_gi, mig_ci;
        char *mig_profile;
        char *mig_uuid;
        uint64_t memory;
} DeviceInfo;

#define DEVICE_INFO_INIT { .numa_node = -1 }

#define CORRAL_DEVICES_MAX 64U /* SCHED_GPUS_MAX */

void device_info_done(DeviceInfo *d);
DeviceInfo *device_info_array_free(DeviceInfo *a, size_t n);

int device_info_to_json(const DeviceInfo *d, json_object **ret);
/* The "devices" array of a GetInfo reply; a missing one (an older daemon, NULL) is no
 * devices. -EINVAL naming the field in *ret_bad_field, -ENOMEM. */
int device_info_array_from_json(json_object *array, DeviceInfo **ret, size_t *ret_n, const char **ret_bad_field);

/* The GPU type Slurm's GPU autodetection derives from a model name, which scripts write
 * in --gres=gpu:TYPE: lower case, blanks as '_' ("NVIDIA A100-SXM4-40GB" ->
 * "nvidia_a100-sxm4-40gb"). NULL model or no room: "". */
char *device_model_type_name(const char *model, char *buf, size_t size);
