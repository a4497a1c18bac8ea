/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What corrald's GPU telemetry reads through NVML (executor/nvml.c), run on a real machine:
 * each GPU's identity and a reading of its counters, one line each, for scripts/gpu-check
 * to set beside nvidia-smi's. Needs only libc (NVML is dlopen()ed), so one built on any
 * Debian runs on the GPU host; reads only. Exits 1 when NVML does not load. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "nvml.h"

int main(int argc, char **argv) {
        _cleanup_(nvml_closep) Nvml *n = NULL;
        char *error = NULL;
        unsigned count;
        int r;

        r = nvml_open(argc > 1 ? argv[1] : NULL, &n, &error);
        if (r < 0) {
                printf("nvml: off: %s\n", error ? error : "cannot load NVML");
                free(error);
                return 1;
        }
        r = nvml_count(n, &count, &error);
        if (r < 0) {
                printf("nvml: count failed: %s\n", error ? error : "?");
                free(error);
                return 1;
        }
        printf("nvml: %s, %u GPUs\n", nvml_path(n), count);
        for (unsigned i = 0; i < count; i++) {
                NvmlGpuInfo g;
                NvmlGpuSample s;

                if (nvml_gpu_info(n, i, &g, &error) < 0 || nvml_gpu_sample(n, i, &s, &error) < 0) {
                        printf("nvml %u: unreadable: %s\n", i, error ? error : "?");
                        free(error);
                        error = NULL;
                        continue;
                }
                _cleanup_free_ char *cpus = cpu_set_format(&g.cpus);
                /* NVLink: its active links in all, and each far end (a GPU's or a switch's bus id). */
                unsigned links = 0;
                char peers[NVML_NVLINK_LINKS_MAX * 20] = "";
                for (size_t k = 0; k < g.n_nvlink; k++) {
                        size_t l = strlen(peers);
                        links += g.nvlink[k].links;
                        snprintf(peers + l, sizeof peers - l, "%s%s*%u", k ? "," : "", g.nvlink[k].pci_address,
                                 g.nvlink[k].links);
                }
                /* Key=value, the name last (it has blanks); unknown: -1 ("-" for cpus). */
                printf("nvml %u uuid=%s pci=%s memory_total=%" PRIu64 " numa=%d cpus=%s mig=%d util=%d memory_used=%" PRIi64
                       " energy_mj=%" PRIi64 " power_mw=%" PRIi64 " temp=%d processes=%zd nvlinks=%d nvlink_peers=%s name=%s\n",
                       i, g.uuid, g.pci_address[0] ? g.pci_address : "-", g.memory_total, g.numa_node,
                       cpus && *cpus ? cpus : "-", g.mig_mode,
                       s.utilization, s.memory_used == UINT64_MAX ? -1 : (int64_t) s.memory_used,
                       s.energy_mj == UINT64_MAX ? -1 : (int64_t) s.energy_mj, s.power_mw, s.temperature,
                       s.n_processes_total == SIZE_MAX ? (ssize_t) -1 : (ssize_t) s.n_processes_total,
                       g.nvlink_supported ? (int) links : -1, peers[0] ? peers : "-", g.name);
                for (size_t k = 0; k < g.n_mig; k++)
                        printf("nvml %u mig uuid=%s gi=%u ci=%u memory_total=%" PRIu64 " profile=%s\n", i, g.mig[k].uuid,
                               g.mig[k].gpu_instance, g.mig[k].compute_instance, g.mig[k].memory_total,
                               g.mig[k].profile[0] ? g.mig[k].profile : "-");
        }
        return 0;
}
