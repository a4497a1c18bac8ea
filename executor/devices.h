/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The machine's schedulable devices: GPUs found by discovery, and any device an admin
 * declares, overrides or hides in corral.conf ([Device] sections; daemon side).
 *
 * Discovery reads, each below a root given as a directory fd so unit tests use a fake tree:
 *   NVIDIA: procfs driver/nvidia/gpus/<PCI>/information ("Model:", "Device Minor:",
 *           "Bus Location:"), device node dev/nvidia<minor>;
 *   AMD:    sysfs class/drm/renderD<N> whose device/vendor is 0x1002, node dev/dri/renderD<N>
 *           (and its card<M> sibling), dev/kfd shared;
 *   both:   sysfs bus/pci/devices/<PCI>/numa_node for the NUMA node (-1: none).
 * No vendor library is needed; one found at run time (dlopen) may add utilisation figures. */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>


#include "macro.h"
#include "string-table.h"
#include "strv.h"

typedef enum DeviceVendor {
        DEVICE_VENDOR_NVIDIA,
        DEVICE_VENDOR_AMD,
        DEVICE_VENDOR_OTHER, /* declared only: an FPGA, a test's fake device, ... */
        _DEVICE_VENDOR_MAX,
        _DEVICE_VENDOR_INVALID = -EINVAL,
} DeviceVendor;

typedef struct Device {
        char *name;          /* "gpu0", ...: unique; the index in its DeviceSet is the GPU index */
        DeviceVendor vendor;
        char *model;         /* "NVIDIA A100-SXM4-40GB"; NULL: unknown */
        char *uuid;          /* NVIDIA's "GPU-5e7c9a3c-..."; NULL: the driver gives none */
        char *pci_address;   /* "0000:3b:00.0"; NULL: not a PCI device or unknown */
        bool auto_name;      /* named by discovery (gpu<index>), not by a [Device] section */
        bool gone;           /* a card known before that is not there now (or hidden): its
                              * index stays its own, nobody is given it (device_set_place()) */
        int numa_node;       /* the kernel's node number; -1: unknown */
        unsigned ordinal;    /* the vendor's number: NVIDIA's device minor, AMD's render minor */
        char **nodes;        /* its own device nodes, absolute ("/dev/nvidia1"), at least one */
        char **features;     /* lower-case names matched by --constraint and --gres=gpu:TYPE */
        unsigned shards;     /* Slurm's shards (--gres=shard:K): jobs that may share it at once */
        bool shards_set;     /* by a [Device] section's Shards=; else the default applies */
        /* A GPU with MIG devices (devices-mig.c): CUDA reaches it only through them, so it
         * is given to no job whole; they are scheduled as GPUs of their own. */
        bool mig_mode;
        /* A MIG device: compute instance mig_ci of GPU instance mig_gi of the GPU whose
         * key (device_key()) is mig_parent. Its uuid is Slurm's "MIG-<GPU's UUID>/GI/CI"
         * (its identity across reloads), its nodes the GPU's and the two capability nodes;
         * NVML adds the rest (devices_mig_update()). */
        bool mig;
        char *mig_parent;
        unsigned mig_gi, mig_ci;
        char *mig_uuid;      /* NVML's "MIG-..." (drivers from R470); NULL: not read */
        char *mig_profile;   /* "1g.10gb"; NULL: not read (NVML gives it, procfs does not) */
        uint64_t memory;     /* bytes; 0: unknown */
} Device;

typedef struct DeviceSet {
        Device *devices;     /* ordered by vendor, then PCI address, then name; once
                              * placed, by index (device_set_place()) */
        size_t n_devices;
        /* Nodes every job holding a device of that vendor also needs, that exist on this
         * machine: /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools,
         * /dev/nvidia-modeset; /dev/kfd. */
        char **shared_nodes[_DEVICE_VENDOR_MAX];
        /* GPUs found that are scheduled to nobody, each with why ("0000:07:00.0 (NVIDIA
         * A100): neither a UUID nor a PCI address is readable"): a card whose identity is
         * unknown cannot be told from another across a reload, so it has no index. */
        char **unscheduled;
        bool placed;         /* by device_set_place(): positions are indexes, kept by finish */
} DeviceSet;

/* Takes d's contents, also on failure: -E2BIG past SCHED_GPUS_MAX devices, -ENOMEM. */
int device_set_add(DeviceSet *s, Device *d);
void device_done(Device *d);
/* d's features from its vendor, model and MIG profile (device_derive_features in
 * devices.c says which). -ENOMEM. */
int device_derive_features(Device *d);

/* Discovery below the three roots (fds of /sys, /proc, /dev, or of a fake tree). A root
 * that lacks a vendor's files simply contributes nothing; a broken file is skipped, as is
 * a GPU its driver excludes. -ENOMEM, or 0 with *ret possibly empty. The devices are named
 * gpu0, gpu1, ... in their order; shared_nodes lists every vendor's that exist until
 * device_set_finish(). */
int devices_discover(int sysfs_fd, int procfs_fd, int dev_fd, DeviceSet **ret);
/* Orders a discovered set (not placed yet) and names its devices gpu<i> by that order,
 * their features derived again: after devices_discover_mig() (devices-mig.h) added. */
int device_set_sort(DeviceSet *s);

/* The identity a device's allocations are kept by, in memory (its index) and in the
 * store: its UUID where the driver gives one, else its PCI address, else (a device a
 * [Device] section declares without PCIAddress=) its name. */
const char *device_key(const Device *d) _pure_;
/* Whether a and b are the same card: the same UUID where both have one, else the same
 * PCI address, else (neither has either) the same name. */
bool device_same(const Device *a, const Device *b) _pure_;
/* Gives each device of s the index its card had in known (a set placed before, or read
 * back from the store; NULL: none), and a card new to known the lowest index known never
 * had, else the lowest of a card known but not there whose bit is in reusable; its
 * discovery name becomes gpu<index>. The known cards not in s stay at their index as
 * gone placeholders, so that positions in s are indexes: a running job's gpu_mask keeps
 * meaning the cards it was given, and a gone card is given to nobody. A device that no
 * index is left for goes to unscheduled. Once s is placed, device_set_apply() keeps the
 * indexes (a hidden device stays as a gone placeholder, a declared one known by its name
 * is revived at its index, a new one takes the next) and a second call does nothing.
 * -ENOMEM, else 0. */
int device_set_place(DeviceSet *s, const DeviceSet *known, uint64_t reusable);
/* Whether d may be given to a job: there, of a known identity, and not a GPU in MIG mode
 * (its MIG devices are given instead). */
static inline bool device_is_schedulable(const Device *d) {
        return d && !d->gone && !d->mig_mode;
}

/* The short model token among a device's features, from its model name: the name is cut
 * into words at blanks, '-' and '_', lower-cased; brand words without a digit are
 * dropped ("nvidia", "amd", "geforce", "tesla", "quadro", "radeon", "instinct", ...); the
 * first word with a digit is the token, joined to a series word right before it when it
 * is all digits ("GeForce RTX 3090" -> "rtx3090", "NVIDIA A100-SXM4-40GB" -> "a100",
 * "AMD Instinct MI250X" -> "mi250x", "Tesla T4" -> "t4"). NULL when there is none. */
char *device_model_token(const char *model);

/* One [Device] section of corral.conf (daemon side): a device declared, or a discovered one
 * (matched by Name= or PCIAddress=) overridden or hidden. NULL/unset fields leave what
 * discovery found. */
typedef struct DeviceDecl {
        const char *name;
        const char *pci_address;
        const char *vendor;          /* "nvidia", "amd", "other"; NULL: unset */
        char *const *nodes;
        const char *model;
        char *const *features;       /* replace the derived ones */
        int numa_node;               /* when numa_node_set; -1: none */
        bool numa_node_set;
        unsigned shards;             /* when shards_set */
        bool shards_set;
        bool hide;
} DeviceDecl;

/* Applies one declaration: -EINVAL (with *ret_error) for a new device without Name= or
 * Nodes=, or a name taken; 0 when applied; 1 when it matches nothing and declares nothing
 * (a Hide=yes or PCIAddress=-only override for a device this machine lacks). Devices are
 * ordered again and the vendors' shared nodes kept by device_set_finish(). */
int device_set_apply(DeviceSet *s, const DeviceDecl *d, char **ret_error);
/* Orders the set (vendor, PCI address, name) and drops the shared nodes of vendors no
 * device has. -E2BIG past SCHED_GPUS_MAX (64) devices. */
int device_set_finish(DeviceSet *s);

const Device *device_set_find(const DeviceSet *s, const char *name) _pure_;

/* Whether a job asking for GPUs of type (--gres=gpu:TYPE; NULL: any) with the Slurm feature
 * expression constraint (NULL: none) may be given d: the type equals, case-insensitively,
 * its name, one of its features or its model's Slurm type name (device-info.h), or is a
 * substring of its model; the constraint holds over its features, its name and that type
 * name. A MIG device matches by name and features only ("1g.10gb", "a100_1g.10gb", "mig"),
 * so that --gres=gpu:a100 keeps meaning whole A100s. The one rule of Submit's check and of
 * the scheduler's gpu_allowed. */
bool device_matches(const Device *d, const char *type, const char *constraint) _pure_;

/* The device fence's base: DeviceAllow= entries (systemd's "char-NAME", "block-NAME" and
 * "/dev/..." forms) that keep every device open that a job could open without a fence,
 * except the nodes of s's devices and shared nodes and everything NVIDIA's drivers serve
 * (major 195 and every driver of procfs's devices named nvidia*: any card's node, present,
 * gone or not scheduled, nvidia-caps, nvidia-nvswitch, ...; the majors of s's NVIDIA
 * devices' nodes; the DRM nodes of sysfs's class/drm whose PCI vendor is NVIDIA's): each
 * char and block driver of procfs's devices whose majors none of those uses, by name, and
 * the other nodes below dev of the majors they do use, by path. The job's own nodes and
 * shared nodes are added by the caller. Device names are escaped for systemd's fnmatch(). */
int device_fence_base(int sysfs_fd, int procfs_fd, int dev_fd, const DeviceSet *s, char ***ret);

DeviceSet *device_set_free(DeviceSet *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(DeviceSet *, device_set_free);

DECLARE_STRING_TABLE_LOOKUP(device_vendor, DeviceVendor);
