/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* MIG devices as GPUs of their own. On a GPU in MIG mode CUDA reaches the GPU only through
 * its MIG devices (a compute instance in a GPU instance), each opened through two
 * capability nodes of the nvidia-caps driver beside the GPU's own node. The driver names
 * them in procfs, which discovery reads (no NVML needed to schedule them):
 *     driver/nvidia/capabilities/gpu<minor>/mig/gi<G>/access         "DeviceFileMinor: <n>"
 *     driver/nvidia/capabilities/gpu<minor>/mig/gi<G>/ci<C>/access   "DeviceFileMinor: <n>"
 * (else driver/nvidia-caps/mig-minors, "gpu<minor>/gi<G>/ci<C>/access <n>" lines), the node
 * being /dev/nvidia-caps/nvidia-cap<n>. NVML adds what procfs lacks: each MIG device's
 * "MIG-..." UUID, its profile ("1g.10gb") and memory (devices_mig_update()). Corral never
 * changes a GPU's MIG mode or layout; a layout changed by an admin is read again at the
 * next reload. */

#include <stdint.h>

#include "devices.h"

/* Adds to s, just discovered (devices_discover()), the MIG devices of its NVIDIA GPUs
 * (each compute instance whose two access files name a minor), each GPU with some marked
 * mig_mode, and sorts and names the set again; past SCHED_GPUS_MAX devices the rest are
 * listed in s->unscheduled. -ENOMEM, else 0. */
int devices_discover_mig(int procfs_fd, DeviceSet *s);

/* What NVML says of MIG device d (uuid "MIG-...", profile "1g.10gb", memory in bytes; NULL
 * or 0: not said): 1 when d changed (its features follow its profile), 0 when not, -ENOMEM. */
int devices_mig_update(Device *d, const char *uuid, const char *profile, uint64_t memory);

/* The share of its GPU a device is: a MIG device's compute slices of its GPU's (1g of 7 on
 * an A100 or H100, of 4 on an A30), as its profile says; 1 of 1 for a whole GPU and for a
 * MIG device whose profile is not known. */
void device_compute_share(const Device *d, unsigned *ret_slices, unsigned *ret_total);

/* The name a job's CUDA_VISIBLE_DEVICES gives MIG device d: NVML's "MIG-..." UUID; NULL
 * while NVML has not named it. */
const char *device_mig_cuda_id(const Device *d) _pure_;
