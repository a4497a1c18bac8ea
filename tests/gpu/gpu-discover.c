/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Corral's GPU discovery and device fence, run against a real machine's /sys, /proc and
 * /dev (scripts/gpu-check builds it statically and runs it on a GPU host): what corrald
 * would schedule, by which identity, and which nodes a job without GPUs is denied. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "devices.h"
#include "devices-mig.h"
#include "fd-util.h"

int main(void) {
        _cleanup_close_ int sys = open("/sys", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_close_ int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_close_ int dev = open("/dev", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_(device_set_freep) DeviceSet *s = NULL;
        _cleanup_strv_free_ char **fence = NULL;
        int r;

        r = devices_discover(sys, proc, dev, &s);
        if (r >= 0)
                r = devices_discover_mig(proc, s);
        if (r < 0) {
                fprintf(stderr, "gpu-discover: discovery failed: %s\n", strerror(-r));
                return 1;
        }
        r = device_set_place(s, NULL, 0);
        if (r >= 0)
                r = device_set_finish(s);
        if (r < 0) {
                fprintf(stderr, "gpu-discover: placing failed: %s\n", strerror(-r));
                return 1;
        }
        printf("devices: %zu\n", s->n_devices);
        for (size_t i = 0; i < s->n_devices; i++) {
                const Device *d = &s->devices[i];

                printf("  %s vendor=%s model=%s uuid=%s pci=%s numa=%d ordinal=%u key=%s%s%s", d->name,
                       device_vendor_to_string(d->vendor), d->model ?: "-", d->uuid ?: "-", d->pci_address ?: "-",
                       d->numa_node, d->ordinal, device_key(d) ?: "-", d->gone ? " GONE" : "",
                       d->mig_mode ? " MIG-MODE" : "");
                if (d->mig)
                        printf(" mig=%u/%u of=%s", d->mig_gi, d->mig_ci, d->mig_parent ?: "-");
                printf("\n");
                STRV_FOREACH(n, d->nodes)
                        printf("    node %s\n", *n);
        }
        for (int v = 0; v < _DEVICE_VENDOR_MAX; v++)
                STRV_FOREACH(n, s->shared_nodes[v])
                        printf("  shared(%s) %s\n", device_vendor_to_string(v), *n);
        STRV_FOREACH(u, s->unscheduled)
                printf("  not scheduled: %s\n", *u);
        r = device_fence_base(sys, proc, dev, s, &fence);
        if (r < 0) {
                fprintf(stderr, "gpu-discover: fence failed: %s\n", strerror(-r));
                return 1;
        }
        printf("fence base (what a job without GPUs may open): %zu entries\n", strv_length(fence));
        STRV_FOREACH(f, fence)
                printf("  allow %s\n", *f);
        return 0;
}
