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
        char *pci_address;   /* "0000:3b:00.0"; NULL: not a PCI device or unknown */
        int numa_node;       /* the kernel's node number; -1: unknown */
        unsigned ordinal;    /* the vendor's number: NVIDIA's device minor, AMD's render minor */
        char **nodes;        /* its own device nodes, absolute ("/dev/nvidia1"), at least one */
        char **features;     /* lower-case names matched by --constraint and --gres=gpu:TYPE */
} Device;

typedef struct DeviceSet {
        Device *devices;     /* ordered by vendor, then PCI address, then name */
        size_t n_devices;
        /* Nodes every job holding a device of that vendor also needs, that exist on this
         * machine: /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools,
         * /dev/nvidia-modeset, /dev/nvidia-caps/...; /dev/kfd. */
        char **shared_nodes[_DEVICE_VENDOR_MAX];
} DeviceSet;

/* Discovery below the three roots (fds of /sys, /proc, /dev, or of a fake tree). A root
 * that lacks a vendor's files simply contributes nothing; a broken file is skipped with a
 * debug message. -ENOMEM, or 0 with *ret possibly empty. */
int devices_discover(int sysfs_fd, int procfs_fd, int dev_fd, DeviceSet **ret);

DeviceSet *device_set_free(DeviceSet *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(DeviceSet *, device_set_free);

DECLARE_STRING_TABLE_LOOKUP(device_vendor, DeviceVendor);
