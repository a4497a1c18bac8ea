/* SPDX-License-Identifier: GPL-2.0-or-later */
/* executor/nvml.c against the fake libnvidia-ml.so.1 (tests/fake-nvml/, its path in
 * $FAKE_NVML_LIBRARY): what NVML says of each GPU and its counters, read as NVIDIA's
 * header lays them out; a library that is missing, incomplete or fails nvmlInit says why;
 * the strings it hands back are bounded and printable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nvml.h"

static char config_path[64];

static const char *fake(void) {
        const char *p = getenv("FAKE_NVML_LIBRARY");

        assert_non_null(p);
        return p;
}

/* Written whole and renamed over, as a test rewrites it while the library reads it. */
static void write_config(const char *text) {
        char tmp[80];
        FILE *f;

        snprintf(tmp, sizeof tmp, "%s.new", config_path);
        f = fopen(tmp, "we");
        assert_non_null(f);
        assert_true(fputs(text, f) >= 0);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(rename(tmp, config_path), 0);
}

static int setup(void **state) {
        int fd;

        snprintf(config_path, sizeof config_path, "/tmp/test-nvml.XXXXXX");
        fd = mkstemp(config_path);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(setenv("FAKE_NVML_CONFIG", config_path, 1), 0);
        unsetenv(NVML_LIBRARY_ENV);
        return 0;
}

static int teardown(void **state) {
        unlink(config_path);
        return 0;
}

#define TWO_GPUS                                                                                   \
        "gpu uuid=GPU-11111111-2222-3333-4444-555555555555 pci=00000000:3B:00.0 memory=42949672960 " \
        "used=1048576 util=57 memutil=12 energy=123456789 power=251000 temp=41 numa=1 mig=0 cpus=0-3,64,130-131 "       \
        "name=NVIDIA A100-SXM4-40GB\n"                                                             \
        "gpu uuid=GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee name=Tesla T4\n"                       \
        "proc 0 4242 1048576\n"                                                                    \
        "proc 0 4343 2097152\n"

static void test_info_and_sample(void **state) {
        _cleanup_(nvml_closep) Nvml *n = NULL;
        _cleanup_free_ char *error = NULL;
        NvmlGpuInfo info;
        NvmlGpuSample s;
        unsigned count;

        write_config(TWO_GPUS);
        assert_int_equal(nvml_open(fake(), &n, &error), 0);
        assert_null(error);
        assert_string_equal(nvml_path(n), fake());
        assert_int_equal(nvml_count(n, &count, &error), 0);
        assert_int_equal(count, 2);

        assert_int_equal(nvml_gpu_info(n, 0, &info, &error), 0);
        assert_string_equal(info.uuid, "GPU-11111111-2222-3333-4444-555555555555");
        assert_string_equal(info.name, "NVIDIA A100-SXM4-40GB");
        assert_string_equal(info.pci_address, "0000:3b:00.0");
        assert_true(info.memory_total == 42949672960ULL);
        assert_int_equal(info.numa_node, 1);
        assert_int_equal(info.mig_mode, 0);
        {
                _cleanup_free_ char *cpus = cpu_set_format(&info.cpus);
                assert_string_equal(cpus, "0-3,64,130-131");
        }

        assert_int_equal(nvml_gpu_sample(n, 0, &s, &error), 0);
        assert_int_equal(s.utilization, 57);
        assert_int_equal(s.memory_utilization, 12);
        assert_true(s.memory_used == 1048576);
        assert_true(s.energy_mj == 123456789ULL);
        assert_int_equal(s.power_mw, 251000);
        assert_int_equal(s.temperature, 41);
        assert_int_equal(s.n_processes, 2);
        assert_int_equal(s.n_processes_total, 2);
        assert_int_equal(s.processes[0].pid, 4242);
        assert_true(s.processes[1].memory_used == 2097152);

        /* What NVML does not give is unknown, not zero. */
        assert_int_equal(nvml_gpu_info(n, 1, &info, &error), 0);
        assert_string_equal(info.name, "Tesla T4");
        assert_string_equal(info.pci_address, "");
        assert_true(info.memory_total == 0);
        assert_int_equal(info.numa_node, -1);
        assert_int_equal(info.mig_mode, -1);
        assert_true(cpu_set_is_empty(&info.cpus));
        assert_int_equal(nvml_gpu_sample(n, 1, &s, &error), 0);
        assert_int_equal(s.utilization, -1);
        assert_true(s.memory_used == UINT64_MAX);
        assert_true(s.energy_mj == UINT64_MAX);
        assert_int_equal(s.power_mw, -1);
        assert_int_equal(s.temperature, -1);
        assert_int_equal(s.n_processes, 0);

        /* An index NVML does not have. */
        assert_int_equal(nvml_gpu_sample(n, 2, &s, &error), -EIO);
        assert_non_null(error);
        assert_string_equal(error, "nvmlDeviceGetHandleByIndex failed: Invalid Argument");
}

/* NVLink: each active link's other end counted by device (a GPU, or an NVSwitch), an
 * inactive link skipped; a GPU without NVLink says so. */
static void test_nvlink(void **state) {
        _cleanup_(nvml_closep) Nvml *n = NULL;
        _cleanup_free_ char *error = NULL;
        NvmlGpuInfo info;

        write_config("gpu uuid=GPU-0 pci=00000000:3B:00.0\n"
                     "gpu uuid=GPU-1 pci=00000000:5E:00.0\n"
                     "gpu uuid=GPU-2 pci=00000000:AF:00.0\n"
                     "nvlink 0 0 00000000:5E:00.0\n"
                     "nvlink 0 1 00000000:5E:00.0\n"
                     "nvlink 0 3 00000000:5E:00.0\n"
                     "nvlink 0 5 00000000:C1:00.0\n"
                     "nvlink 1 0 00000000:3B:00.0\n");
        assert_int_equal(nvml_open(fake(), &n, &error), 0);
        assert_int_equal(nvml_gpu_info(n, 0, &info, &error), 0);
        assert_true(info.nvlink_supported);
        assert_int_equal(info.n_nvlink, 2);
        assert_string_equal(info.nvlink[0].pci_address, "0000:5e:00.0");
        assert_int_equal(info.nvlink[0].links, 3);
        assert_string_equal(info.nvlink[1].pci_address, "0000:c1:00.0"); /* a switch */
        assert_int_equal(info.nvlink[1].links, 1);
        assert_int_equal(nvml_gpu_info(n, 1, &info, &error), 0);
        assert_int_equal(info.n_nvlink, 1);
        assert_int_equal(nvml_gpu_info(n, 2, &info, &error), 0);
        assert_false(info.nvlink_supported);
        assert_int_equal(info.n_nvlink, 0);
}

/* MIG mode: each MIG device NVML lists (empty slots skipped), its UUID, profile as Slurm
 * spells it, GPU and compute instance, memory; a GPU not in MIG mode lists none. */
static void test_mig(void **state) {
        _cleanup_(nvml_closep) Nvml *n = NULL;
        _cleanup_free_ char *error = NULL;
        NvmlGpuInfo info;
        char profile[NVML_MIG_PROFILE_MAX];

        write_config("gpu uuid=GPU-0 mig=1 name=NVIDIA A100-SXM4-40GB\n"
                     "gpu uuid=GPU-1 mig=0 name=NVIDIA A100-SXM4-40GB\n"
                     "mig 0 1 0 MIG-11 10468982784 NVIDIA A100-SXM4-40GB MIG 3g.20gb\n"
                     "mig 0 2 0 MIG-22 5242880000 NVIDIA A100-SXM4-40GB MIG 1g.5gb\n"
                     "mig 1 9 0 MIG-99 5242880000 NVIDIA A100-SXM4-40GB MIG 1g.5gb\n");
        assert_int_equal(nvml_open(fake(), &n, &error), 0);
        assert_int_equal(nvml_gpu_info(n, 0, &info, &error), 0);
        assert_int_equal(info.mig_mode, 1);
        assert_int_equal(info.n_mig, 2);
        assert_string_equal(info.mig[0].uuid, "MIG-11");
        assert_string_equal(info.mig[0].profile, "3g.20gb");
        assert_int_equal(info.mig[0].gpu_instance, 1);
        assert_int_equal(info.mig[0].compute_instance, 0);
        assert_true(info.mig[0].memory_total == 10468982784ULL);
        assert_string_equal(info.mig[1].uuid, "MIG-22");
        assert_string_equal(info.mig[1].profile, "1g.5gb");
        assert_int_equal(info.mig[1].gpu_instance, 2);
        /* Not in MIG mode: its (stale) MIG lines are not read. */
        assert_int_equal(nvml_gpu_info(n, 1, &info, &error), 0);
        assert_int_equal(info.mig_mode, 0);
        assert_int_equal(info.n_mig, 0);

        nvml_mig_profile("NVIDIA H100 80GB HBM3 MIG 1g.10gb", profile);
        assert_string_equal(profile, "1g.10gb");
        nvml_mig_profile("NVIDIA H100 80GB HBM3", profile);
        assert_string_equal(profile, "");
}

static void test_counters_move(void **state) {
        _cleanup_(nvml_closep) Nvml *n = NULL;
        _cleanup_free_ char *error = NULL;
        NvmlGpuSample s;

        write_config("gpu uuid=GPU-1 util=10 memory=100 used=5 energy=1000\n");
        assert_int_equal(nvml_open(fake(), &n, &error), 0);
        assert_int_equal(nvml_gpu_sample(n, 0, &s, &error), 0);
        assert_int_equal(s.utilization, 10);
        assert_true(s.energy_mj == 1000);
        write_config("gpu uuid=GPU-1 util=90 memory=100 used=77 energy=5000\n");
        assert_int_equal(nvml_gpu_sample(n, 0, &s, &error), 0);
        assert_int_equal(s.utilization, 90);
        assert_true(s.memory_used == 77);
        assert_true(s.energy_mj == 5000);
}

static void test_many_processes_bounded(void **state) {
        _cleanup_(nvml_closep) Nvml *n = NULL;
        _cleanup_free_ char *error = NULL;
        char text[8192] = "gpu uuid=GPU-1\n";
        NvmlGpuSample s;

        for (unsigned i = 0; i < NVML_PROCESSES_MAX + 6; i++) {
                size_t len = strlen(text);
                snprintf(text + len, sizeof text - len, "proc 0 %u 1\n", 1000 + i);
        }
        write_config(text);
        assert_int_equal(nvml_open(fake(), &n, &error), 0);
        assert_int_equal(nvml_gpu_sample(n, 0, &s, &error), 0);
        assert_int_equal(s.n_processes, NVML_PROCESSES_MAX);
        assert_int_equal(s.n_processes_total, NVML_PROCESSES_MAX + 6);
        assert_int_equal(s.processes[NVML_PROCESSES_MAX - 1].pid, 1000 + NVML_PROCESSES_MAX - 1);
}

static void test_open_failures(void **state) {
        _cleanup_(nvml_closep) Nvml *n = NULL;
        char *error = NULL;

        assert_int_equal(nvml_open("/nonexistent/libnvidia-ml.so.1", &n, &error), -ENOENT);
        assert_null(n);
        assert_non_null(error);
        assert_true(strncmp(error, "/nonexistent/libnvidia-ml.so.1 not found: ", 42) == 0);
        free(error);
        error = NULL;

        /* A library, but not NVML. */
        assert_int_equal(nvml_open("libm.so.6", &n, &error), -ENOSYS);
        assert_string_equal(error, "libm.so.6 lacks nvmlInit_v2");
        free(error);
        error = NULL;

        write_config("init-error 9\n");
        assert_int_equal(nvml_open(fake(), &n, &error), -EIO);
        assert_null(n);
        assert_string_equal(error, "nvmlInit failed: Driver Not Loaded");
        free(error);
        error = NULL;

        /* The environment names the library when the caller does not. */
        write_config("gpu uuid=GPU-1\n");
        assert_int_equal(setenv(NVML_LIBRARY_ENV, fake(), 1), 0);
        assert_int_equal(nvml_open(NULL, &n, &error), 0);
        assert_string_equal(nvml_path(n), fake());
        unsetenv(NVML_LIBRARY_ENV);
}

static void test_pci_address(void **state) {
        char out[NVML_PCI_ADDRESS_MAX];
        static const struct { const char *in, *out; } ok[] = {
                { "00000000:3B:00.0", "0000:3b:00.0" },
                { "00000001:AF:1F.7", "0001:af:1f.7" },
                { "0000:07:00.0", "0000:07:00.0" },
        };
        static const char *bad[] = {
                "", "0000:07:00", "00000000:3B:00.8", "00000000:3B:20.0", "10000000:3B:00.0",
                "0000-07:00.0", "0000:07:00.0 ", "000000000:3B:00.0", "0000:0g:00.0",
        };

        for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
                assert_int_equal(nvml_pci_address_normalize(ok[i].in, 32, out), 0);
                assert_string_equal(out, ok[i].out);
        }
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
                assert_int_equal(nvml_pci_address_normalize(bad[i], 32, out), -EINVAL);
        /* Not read past the buffer's end: cut short, it is too short. */
        assert_int_equal(nvml_pci_address_normalize("00000000:3B:00.0", 12, out), -EINVAL);
}

static void test_string_copy(void **state) {
        char out[8];

        nvml_string_copy(out, sizeof out, "A100\x1b[2J", 32);
        assert_string_equal(out, "A100?[2");
        nvml_string_copy(out, sizeof out, "abcdef", 3);
        assert_string_equal(out, "abc");
        nvml_string_copy(out, sizeof out, "\xc3\xa9", 2);
        assert_string_equal(out, "??");
        nvml_string_copy(out, sizeof out, NULL, 5);
        assert_string_equal(out, "");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_info_and_sample),
                cmocka_unit_test(test_nvlink),
                cmocka_unit_test(test_mig),
                cmocka_unit_test(test_counters_move),
                cmocka_unit_test(test_many_processes_bounded),
                cmocka_unit_test(test_open_failures),
                cmocka_unit_test(test_pci_address),
                cmocka_unit_test(test_string_copy),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
