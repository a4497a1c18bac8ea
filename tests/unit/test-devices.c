/* SPDX-License-Identifier: GPL-2.0-or-later */
/* GPU discovery over fake sysfs/procfs/dev trees written as the drivers write them
 * (executor/devices.c names the sources), [Device] declarations over it, type and
 * constraint matching, and the device fence's base list. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "executor/devices.h"
#include "executor/devices-mig.h"
#include "fd-util.h"
#include "tmp-tree.h"

#define FENCE_BASE(r, s, ret) device_fence_base((r)->sys, (r)->proc, (r)->dev, (s), (ret))

typedef struct Roots {
        Tree tree;
        int sys, proc, dev;
} Roots;

static int roots_setup(void **state) {
        Tree *t;
        Roots *r = calloc(1, sizeof *r);

        assert_non_null(r);
        tree_setup_prefix((void **) &t, "test-devices");
        r->tree = *t;
        free(t);
        assert_int_equal(mkdirat(r->tree.fd, "sys", 0755), 0);
        assert_int_equal(mkdirat(r->tree.fd, "proc", 0755), 0);
        assert_int_equal(mkdirat(r->tree.fd, "dev", 0755), 0);
        r->sys = openat(r->tree.fd, "sys", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        r->proc = openat(r->tree.fd, "proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        r->dev = openat(r->tree.fd, "dev", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(r->sys >= 0 && r->proc >= 0 && r->dev >= 0);
        *state = r;
        return 0;
}

static int roots_teardown(void **state) {
        Roots *r = *state;
        Tree *t = malloc(sizeof *t);
        void *ts = t;

        safe_close(r->sys);
        safe_close(r->proc);
        safe_close(r->dev);
        *t = r->tree;
        free(r);
        return tree_teardown(&ts);
}

static void mkparents(int root, const char *path) {
        char buf[512], *p;

        (void) snprintf(buf, sizeof buf, "%s", path);
        for (p = buf; (p = strchr(p, '/')); p++) {
                *p = 0;
                (void) mkdirat(root, buf, 0755);
                *p = '/';
        }
}

static void put(int root, const char *path, const char *content) {
        int fd;

        mkparents(root, path);
        fd = openat(root, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(loop_write(fd, content, strlen(content)), 0);
        safe_close(fd);
}

static void put_link(int root, const char *path, const char *target) {
        mkparents(root, path);
        assert_int_equal(symlinkat(target, root, path), 0);
}

/* NVIDIA's information file, field for field as nv-procfs.c prints it. */
static void put_nvidia_info(Roots *r, const char *pci, const char *model, unsigned minor, int numa, bool excluded) {
        char path[256], text[1024];

        (void) snprintf(path, sizeof path, "driver/nvidia/gpus/%s/information", pci);
        (void) snprintf(text, sizeof text,
                        "Model: \t\t %s\n"
                        "IRQ:   \t\t %u\n"
                        "GPU UUID: \t GPU-5e7c9a3c-1b2d-4f4e-8a6b-0c1d2e3f4a%02u\n"
                        "Video BIOS: \t 92.00.25.00.08\n"
                        "Bus Type: \t PCIe\n"
                        "DMA Size: \t 47 bits\n"
                        "DMA Mask: \t 0x7fffffffffff\n"
                        "Bus Location: \t %s\n"
                        "Device Minor: \t %u\n"
                        "GPU Excluded:\t %s\n",
                        model, 150 + minor, minor, pci, minor, excluded ? "Yes" : "No");
        put(r->proc, path, text);
        (void) snprintf(path, sizeof path, "bus/pci/devices/%s/numa_node", pci);
        (void) snprintf(text, sizeof text, "%d\n", numa);
        put(r->sys, path, text);
}

static void put_nvidia(Roots *r, const char *pci, const char *model, unsigned minor, int numa, bool excluded) {
        char path[64];

        put_nvidia_info(r, pci, model, minor, numa, excluded);
        (void) snprintf(path, sizeof path, "nvidia%u", minor);
        put(r->dev, path, "");
}

/* An amdgpu render node: the class device, its PCI function's vendor, device id, optional
 * product_name and numa_node, and its card sibling. */
static void put_amd(Roots *r, unsigned render, unsigned card, const char *pci, const char *vendor,
                    const char *product, int numa) {
        char path[256], target[256], text[64];

        (void) snprintf(path, sizeof path, "bus/pci/devices/%s/vendor", pci);
        (void) snprintf(text, sizeof text, "%s\n", vendor);
        put(r->sys, path, text);
        (void) snprintf(path, sizeof path, "bus/pci/devices/%s/device", pci);
        put(r->sys, path, "0x740f\n");
        (void) snprintf(path, sizeof path, "bus/pci/devices/%s/numa_node", pci);
        (void) snprintf(text, sizeof text, "%d\n", numa);
        put(r->sys, path, text);
        if (product) {
                (void) snprintf(path, sizeof path, "bus/pci/devices/%s/product_name", pci);
                put(r->sys, path, product);
        }
        (void) snprintf(path, sizeof path, "bus/pci/devices/%s/drm/card%u/dev", pci, card);
        put(r->sys, path, "226:0\n");
        (void) snprintf(path, sizeof path, "bus/pci/devices/%s/drm/renderD%u/dev", pci, render);
        put(r->sys, path, "226:128\n");
        /* class/drm/renderD<N>/device -> ../../../bus/pci/devices/<PCI> (relative, as in sysfs) */
        (void) snprintf(path, sizeof path, "class/drm/renderD%u", render);
        (void) snprintf(target, sizeof target, "../../bus/pci/devices/%s/drm/renderD%u", pci, render);
        put_link(r->sys, path, target);
        (void) snprintf(path, sizeof path, "bus/pci/devices/%s/drm/renderD%u/device", pci, render);
        (void) snprintf(target, sizeof target, "../../../%s", pci);
        put_link(r->sys, path, target);
}

static void test_nvidia_eight_on_two_nodes(void **state) {
        Roots *r = *state;
        _cleanup_(device_set_freep) DeviceSet *s = NULL;
        static const char *const pcis[] = { "0000:07:00.0", "0000:0f:00.0", "0000:47:00.0", "0000:4e:00.0",
                                            "0000:87:00.0", "0000:90:00.0", "0000:b7:00.0", "0000:bd:00.0" };

        /* Written out of order: the driver's minors need not follow the bus. */
        for (int i = 7; i >= 0; i--)
                put_nvidia(r, pcis[i], "NVIDIA A100-SXM4-40GB", (unsigned) (i ^ 1), i < 4 ? 0 : 1, false);
        put(r->proc, "driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14\n");
        put(r->dev, "nvidiactl", "");
        put(r->dev, "nvidia-uvm", "");
        put(r->dev, "nvidia-uvm-tools", "");
        put(r->dev, "nvidia-caps/nvidia-cap1", "");
        put(r->dev, "nvidia-caps/nvidia-cap2", "");

        assert_int_equal(devices_discover(r->sys, r->proc, r->dev, &s), 0);
        assert_int_equal(s->n_devices, 8);
        for (size_t i = 0; i < 8; i++) {
                const Device *d = &s->devices[i];
                char name[16], node[32];

                (void) snprintf(name, sizeof name, "gpu%zu", i);
                (void) snprintf(node, sizeof node, "/dev/nvidia%zu", i ^ 1);
                assert_string_equal(d->name, name);
                assert_string_equal(d->pci_address, pcis[i]);
                assert_int_equal(d->vendor, DEVICE_VENDOR_NVIDIA);
                assert_string_equal(d->model, "NVIDIA A100-SXM4-40GB");
                assert_int_equal(d->numa_node, i < 4 ? 0 : 1);
                assert_int_equal(d->ordinal, i ^ 1);
                assert_int_equal(strv_length(d->nodes), 1);
                assert_string_equal(d->nodes[0], node);
                assert_int_equal(strv_length(d->features), 3);
                assert_string_equal(d->features[0], "gpu");
                assert_string_equal(d->features[1], "nvidia");
                assert_string_equal(d->features[2], "a100");
        }
        /* nvidia-modeset is not there; the capabilities are, and are no job's. */
        assert_int_equal(strv_length(s->shared_nodes[DEVICE_VENDOR_NVIDIA]), 3);
        assert_true(strv_contains(s->shared_nodes[DEVICE_VENDOR_NVIDIA], "/dev/nvidiactl"));
        assert_true(strv_contains(s->shared_nodes[DEVICE_VENDOR_NVIDIA], "/dev/nvidia-uvm-tools"));
        assert_false(strv_contains(s->shared_nodes[DEVICE_VENDOR_NVIDIA], "/dev/nvidia-caps/nvidia-cap2"));
        assert_false(strv_contains(s->shared_nodes[DEVICE_VENDOR_NVIDIA], "/dev/nvidia-modeset"));
        assert_null(s->shared_nodes[DEVICE_VENDOR_AMD]);
}

static void test_nvidia_excluded_and_broken(void **state) {
        Roots *r = *state;
        _cleanup_(device_set_freep) DeviceSet *s = NULL;

        put_nvidia(r, "0000:01:00.0", "NVIDIA H100 80GB HBM3", 0, 0, false);
        put_nvidia(r, "0000:02:00.0", "NVIDIA H100 80GB HBM3", 1, 0, true); /* NVreg_ExcludedGpus */
        /* No minor, a minor that is not a number, nvidiactl's minor, an empty file, a directory
         * without the file: each skipped. */
        put(r->proc, "driver/nvidia/gpus/0000:03:00.0/information", "Model: \t\t NVIDIA H100\nIRQ:   \t\t 7\n");
        put(r->proc, "driver/nvidia/gpus/0000:04:00.0/information",
            "Model: \t\t NVIDIA H100\nDevice Minor: \t two\n");
        put(r->proc, "driver/nvidia/gpus/0000:05:00.0/information", "Device Minor: \t 255\n");
        put(r->proc, "driver/nvidia/gpus/0000:06:00.0/information", "");
        assert_int_equal(mkdirat(r->proc, "driver/nvidia/gpus/0000:08:00.0", 0755), 0);
        /* A numa_node that is garbage reads as unknown. */
        put_nvidia(r, "0000:09:00.0", "Tesla T4", 7, 0, false);
        put(r->sys, "bus/pci/devices/0000:09:00.0/numa_node", "node one\n");

        assert_int_equal(devices_discover(r->sys, r->proc, r->dev, &s), 0);
        assert_int_equal(s->n_devices, 2);
        assert_string_equal(s->devices[0].pci_address, "0000:01:00.0");
        assert_string_equal(s->devices[0].features[2], "h100");
        assert_int_equal(s->devices[0].numa_node, 0);
        assert_string_equal(s->devices[1].pci_address, "0000:09:00.0");
        assert_string_equal(s->devices[1].nodes[0], "/dev/nvidia7");
        assert_string_equal(s->devices[1].features[2], "t4");
        assert_int_equal(s->devices[1].numa_node, -1);
        /* No control node on disk: none listed. */
        assert_int_equal(device_set_finish(s), 0);
        assert_null(s->shared_nodes[DEVICE_VENDOR_NVIDIA]);
}

static void test_amd(void **state) {
        Roots *r = *state;
        _cleanup_(device_set_freep) DeviceSet *s = NULL;

        put_amd(r, 129, 2, "0000:c3:00.0", "0x1002", NULL, 1);
        put_amd(r, 128, 1, "0000:03:00.0", "0x1002", "AMD Instinct MI210\n", 0);
        put_amd(r, 130, 3, "0000:04:00.0", "0x8086", NULL, 0); /* an Intel iGPU's render node */
        put(r->dev, "kfd", "");
        put(r->dev, "nvidiactl", ""); /* no NVIDIA GPU: not shared by anyone once finished */

        assert_int_equal(devices_discover(r->sys, r->proc, r->dev, &s), 0);
        assert_int_equal(strv_length(s->shared_nodes[DEVICE_VENDOR_NVIDIA]), 1);
        assert_int_equal(device_set_finish(s), 0);
        assert_int_equal(s->n_devices, 2);
        assert_string_equal(s->devices[0].name, "gpu0");
        assert_string_equal(s->devices[0].pci_address, "0000:03:00.0");
        assert_string_equal(s->devices[0].model, "AMD Instinct MI210");
        assert_int_equal(s->devices[0].ordinal, 128);
        assert_int_equal(strv_length(s->devices[0].nodes), 2);
        assert_string_equal(s->devices[0].nodes[0], "/dev/dri/renderD128");
        assert_string_equal(s->devices[0].nodes[1], "/dev/dri/card1");
        assert_string_equal(s->devices[0].features[0], "gpu");
        assert_string_equal(s->devices[0].features[1], "amd");
        assert_string_equal(s->devices[0].features[2], "mi210");
        assert_string_equal(s->devices[1].pci_address, "0000:c3:00.0");
        assert_string_equal(s->devices[1].model, "AMD 0x1002:0x740f"); /* no product_name */
        assert_int_equal(s->devices[1].numa_node, 1);
        assert_string_equal(s->devices[1].nodes[1], "/dev/dri/card2");
        assert_int_equal(strv_length(s->shared_nodes[DEVICE_VENDOR_AMD]), 1);
        assert_string_equal(s->shared_nodes[DEVICE_VENDOR_AMD][0], "/dev/kfd");
        assert_null(s->shared_nodes[DEVICE_VENDOR_NVIDIA]);
}

static void test_none(void **state) {
        Roots *r = *state;
        _cleanup_(device_set_freep) DeviceSet *s = NULL;

        put(r->dev, "null", "");
        put(r->sys, "class/drm/version", "drm 1.1.0 20060810\n");
        assert_int_equal(devices_discover(r->sys, r->proc, r->dev, &s), 0);
        assert_int_equal(s->n_devices, 0);
        for (size_t v = 0; v < _DEVICE_VENDOR_MAX; v++)
                assert_null(s->shared_nodes[v]);
}

static void test_model_token(void **state) {
        static const struct {
                const char *model, *token;
        } t[] = {
                { "NVIDIA A100-SXM4-40GB", "a100" },
                { "NVIDIA H100 80GB HBM3", "h100" },
                { "Tesla V100-SXM2-16GB", "v100" },
                { "Tesla T4", "t4" },
                { "NVIDIA GeForce RTX 3090", "rtx3090" },
                { "NVIDIA GeForce GTX 1080 Ti", "gtx1080" },
                { "Quadro RTX 8000", "rtx8000" },
                { "NVIDIA RTX A6000", "a6000" },
                { "NVIDIA L40S", "l40s" },
                { "AMD Instinct MI250X", "mi250x" },
                { "AMD Radeon RX 7900 XTX", "rx7900" },
                { "NVIDIA", NULL },
                { "", NULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                _cleanup_free_ char *tok = device_model_token(t[i].model);
                if (t[i].token)
                        assert_string_equal(tok, t[i].token);
                else
                        assert_null(tok);
        }
        assert_null(device_model_token(NULL));
}

static void test_declare_override_hide(void **state) {
        Roots *r = *state;
        _cleanup_(device_set_freep) DeviceSet *s = NULL;
        _cleanup_free_ char *err = NULL;
        char n0[] = "/dev/fpga0", f0[] = "FPGA", f1[] = "u250";
        char *nodes[] = { n0, NULL }, *feats[] = { f0, f1, NULL };

        put_nvidia(r, "0000:01:00.0", "NVIDIA A100-PCIE-40GB", 0, 0, false);
        put_nvidia(r, "0000:02:00.0", "NVIDIA A100-PCIE-40GB", 1, 1, false);
        put_nvidia(r, "0000:03:00.0", "NVIDIA A100-PCIE-40GB", 2, 1, false);
        assert_int_equal(devices_discover(r->sys, r->proc, r->dev, &s), 0);
        assert_int_equal(s->n_devices, 3);

        /* An FPGA, declared; a discovered GPU's NUMA node and features overridden by name;
         * another hidden by PCI address; a PCI-only override of an absent device. */
        assert_int_equal(device_set_apply(s, &(DeviceDecl) { .name = "fpga0", .vendor = "other", .nodes = nodes,
                                                             .features = feats, .numa_node = 1, .numa_node_set = true }, &err), 0);
        assert_int_equal(device_set_apply(s, &(DeviceDecl) { .name = "gpu0", .numa_node = 1, .numa_node_set = true,
                                                             .model = "NVIDIA H100 PCIe" }, &err), 0);
        assert_int_equal(device_set_apply(s, &(DeviceDecl) { .pci_address = "0000:02:00.0", .hide = true }, &err), 0);
        assert_int_equal(device_set_apply(s, &(DeviceDecl) { .pci_address = "0000:99:00.0", .numa_node = -2,
                                                             .model = "x" }, &err), 1);
        assert_int_equal(device_set_apply(s, &(DeviceDecl) { .name = "gone", .hide = true },
                                          &err), 1);
        assert_null(err);
        /* A new device needs its nodes; a bad vendor is refused. */
        assert_int_equal(device_set_apply(s, &(DeviceDecl) { .name = "x" }, &err), -EINVAL);
        assert_non_null(strstr(err, "Nodes="));
        err = mfree(err);
        assert_int_equal(device_set_apply(s, &(DeviceDecl) { .name = "gpu2", .vendor = "intel" },
                                          &err), -EINVAL);
        assert_non_null(strstr(err, "intel"));
        err = mfree(err);

        assert_int_equal(device_set_finish(s), 0);
        assert_int_equal(s->n_devices, 3);
        assert_string_equal(s->devices[0].name, "gpu0");
        assert_int_equal(s->devices[0].numa_node, 1);
        assert_string_equal(s->devices[0].features[2], "h100"); /* the new model's */
        assert_string_equal(s->devices[1].name, "gpu2");
        assert_string_equal(s->devices[2].name, "fpga0");     /* vendor "other" sorts last */
        assert_int_equal(s->devices[2].vendor, DEVICE_VENDOR_OTHER);
        assert_string_equal(s->devices[2].features[0], "fpga"); /* lower-cased */
        assert_string_equal(s->devices[2].nodes[0], "/dev/fpga0");
}

static void test_matches(void **state) {
        char node[] = "/dev/nvidia0", gpu[] = "gpu", nv[] = "nvidia", a100[] = "a100", h100[] = "h100",
             nvlink[] = "nvlink", n0[] = "gpu0", n1[] = "gpu1", ma[] = "NVIDIA A100-SXM4-40GB",
             mh[] = "NVIDIA H100 80GB HBM3";
        char *nodes[] = { node, NULL };
        char *f1[] = { gpu, nv, a100, NULL }, *f2[] = { gpu, nv, h100, nvlink, NULL };
        Device a = { .name = n0, .model = ma, .nodes = nodes, .features = f1 };
        Device h = { .name = n1, .model = mh, .nodes = nodes, .features = f2 };

        assert_true(device_matches(&a, NULL, NULL));
        assert_true(device_matches(&a, "A100", NULL));
        assert_true(device_matches(&a, "sxm4", NULL)); /* model substring */
        assert_true(device_matches(&a, "gpu0", NULL));
        assert_false(device_matches(&a, "h100", NULL));
        assert_true(device_matches(&a, NULL, "a100|h100"));
        assert_true(device_matches(&h, NULL, "a100|h100"));
        assert_false(device_matches(&a, NULL, "gpu&nvlink"));
        assert_true(device_matches(&h, "gpu", "(a100|h100)&nvlink"));
        assert_false(device_matches(&h, NULL, "a100*2")); /* invalid here: matches nothing */
}

/* The fence's base, over a fake /proc/devices and a /dev of real nodes (mknod: root only). */
static void test_fence_base(void **state) {
        Roots *r = *state;
        _cleanup_(device_set_freep) DeviceSet *s = NULL;
        _cleanup_strv_free_ char **allow = NULL;

        if (mknodat(r->dev, "null", S_IFCHR | 0666, makedev(1, 3)) < 0) {
                skip(); /* not root */
                return;
        }
        assert_int_equal(mkdirat(r->dev, "dri", 0755), 0);
        assert_int_equal(mkdirat(r->dev, "pts", 0755), 0);
        assert_int_equal(mknodat(r->dev, "fuse", S_IFCHR | 0666, makedev(10, 229)), 0);
        assert_int_equal(mknodat(r->dev, "pts/0", S_IFCHR | 0620, makedev(136, 0)), 0);
        assert_int_equal(mknodat(r->dev, "vda", S_IFBLK | 0660, makedev(254, 0)), 0);
        assert_int_equal(mknodat(r->dev, "nvidia0", S_IFCHR | 0666, makedev(195, 0)), 0);
        assert_int_equal(mknodat(r->dev, "nvidia1", S_IFCHR | 0666, makedev(195, 1)), 0);
        assert_int_equal(mknodat(r->dev, "nvidia2", S_IFCHR | 0666, makedev(195, 2)), 0); /* hidden */
        assert_int_equal(mknodat(r->dev, "nvidiactl", S_IFCHR | 0666, makedev(195, 255)), 0);
        assert_int_equal(mknodat(r->dev, "nvidia-uvm", S_IFCHR | 0666, makedev(511, 0)), 0);
        assert_int_equal(mknodat(r->dev, "dri/card0", S_IFCHR | 0660, makedev(226, 0)), 0); /* an iGPU */
        assert_int_equal(mknodat(r->dev, "stale", S_IFCHR | 0660, makedev(300, 0)), 0);    /* no driver */
        put(r->proc, "devices",
            "Character devices:\n"
            "  1 mem\n"
            "  5 /dev/tty\n"
            "  5 /dev/ptmx\n"
            " 10 misc\n"
            "136 pts\n"
            "137 pts\n"
            "195 nvidia-frontend\n"
            "226 drm\n"
            "234 a*b\n"
            "511 nvidia-uvm\n"
            "\n"
            "Block devices:\n"
            "  8 sd\n"
            "254 virtblk\n");
        put_nvidia_info(r, "0000:01:00.0", "NVIDIA A100", 0, 0, false);
        put_nvidia_info(r, "0000:02:00.0", "NVIDIA A100", 1, 0, false);
        assert_int_equal(devices_discover(r->sys, r->proc, r->dev, &s), 0);
        assert_int_equal(s->n_devices, 2);

        assert_int_equal(FENCE_BASE(r, s, &allow), 0);
        /* Every driver but the GPUs' majors' by name, once per name, special characters escaped. */
        assert_true(strv_contains(allow, "char-mem"));
        assert_true(strv_contains(allow, "char-/dev/tty"));
        assert_true(strv_contains(allow, "char-misc"));
        assert_true(strv_contains(allow, "char-pts"));
        assert_true(strv_contains(allow, "char-drm"));
        assert_true(strv_contains(allow, "char-a\\*b"));
        assert_true(strv_contains(allow, "block-sd"));
        assert_true(strv_contains(allow, "block-virtblk"));
        assert_false(strv_contains(allow, "char-nvidia-frontend"));
        assert_false(strv_contains(allow, "char-nvidia-uvm"));
        /* A stale node of no driver by path as before; never an NVIDIA card's node, not
         * even of one the configuration does not schedule. */
        assert_false(strv_contains(allow, "/dev/nvidia2"));
        assert_true(strv_contains(allow, "/dev/stale"));
        assert_false(strv_contains(allow, "/dev/nvidia0"));
        assert_false(strv_contains(allow, "/dev/nvidia1"));
        assert_false(strv_contains(allow, "/dev/nvidiactl"));
        assert_false(strv_contains(allow, "/dev/nvidia-uvm"));
        assert_false(strv_contains(allow, "/dev/fuse")); /* char-misc has it */
        assert_false(strv_contains(allow, "/dev/pts/0"));
        size_t n = 0;
        STRV_FOREACH(a, allow)
                n += streq(*a, "char-pts");
        assert_int_equal(n, 1);
}


/* A card falls off the bus (its procfs directory goes): the others keep their names, so
 * that an allocation of gpu1 still means the card it meant. */
static void test_card_removed(void **state) {
        Roots *r = *state;
        _cleanup_(device_set_freep) DeviceSet *a = NULL, *b = NULL;

        put_nvidia(r, "0000:01:00.0", "NVIDIA A100", 0, 0, false);
        put_nvidia(r, "0000:02:00.0", "NVIDIA A100", 1, 0, false);
        put_nvidia(r, "0000:03:00.0", "NVIDIA A100", 2, 0, false);
        assert_int_equal(devices_discover(r->sys, r->proc, r->dev, &a), 0);
        assert_int_equal(device_set_place(a, NULL, 0), 0);
        assert_int_equal(a->n_devices, 3);
        assert_string_equal(a->devices[1].name, "gpu1");
        assert_string_equal(a->devices[1].pci_address, "0000:02:00.0");
        assert_string_equal(device_key(&a->devices[1]), "GPU-5e7c9a3c-1b2d-4f4e-8a6b-0c1d2e3f4a01");

        assert_int_equal(unlinkat(r->proc, "driver/nvidia/gpus/0000:01:00.0/information", 0), 0);
        assert_int_equal(unlinkat(r->proc, "driver/nvidia/gpus/0000:01:00.0", AT_REMOVEDIR), 0);
        assert_int_equal(devices_discover(r->sys, r->proc, r->dev, &b), 0);
        assert_int_equal(device_set_place(b, a, 0), 0);
        const Device *d = device_set_find(b, "gpu1");
        assert_non_null(d);
        assert_string_equal(d->pci_address, "0000:02:00.0");
        /* The gone card keeps index 0, given to nobody. */
        assert_int_equal(b->n_devices, 3);
        assert_true(b->devices[0].gone);
        assert_false(device_is_schedulable(&b->devices[0]));
        assert_string_equal(b->devices[0].pci_address, "0000:01:00.0");
        assert_string_equal(b->devices[2].pci_address, "0000:03:00.0");
        assert_true(device_is_schedulable(&b->devices[2]));
}

/* A card new to the machine, first in PCI order, takes the next index, not another's; the
 * UUID the driver prints as question marks while a GPU is not initialised is remembered;
 * a card of no identity is scheduled to nobody, and said why. */
static void test_card_added_and_identity(void **state) {
        Roots *r = *state;
        _cleanup_(device_set_freep) DeviceSet *a = NULL, *b = NULL, *c = NULL;

        put_nvidia(r, "0000:02:00.0", "NVIDIA A100", 1, 0, false);
        put_nvidia(r, "0000:03:00.0", "NVIDIA A100", 2, 0, false);
        assert_int_equal(devices_discover(r->sys, r->proc, r->dev, &a), 0);
        assert_int_equal(device_set_place(a, NULL, 0), 0);
        assert_string_equal(a->devices[0].pci_address, "0000:02:00.0");

        put_nvidia(r, "0000:01:00.0", "NVIDIA A100", 0, 0, false);
        put(r->proc, "driver/nvidia/gpus/0000:03:00.0/information",
            "Model: \t\t NVIDIA A100\nGPU UUID: \t ????????" "-????" "-????" "-????" "-????????????\n"
            "Bus Location: \t 0000:03:00.0\nDevice Minor: \t 2\n");
        put(r->proc, "driver/nvidia/gpus/garbage/information",
            "Model: \t\t NVIDIA A100\nGPU UUID: \t ??\nBus Location: \t ??\nDevice Minor: \t 7\n");
        assert_int_equal(devices_discover(r->sys, r->proc, r->dev, &b), 0);
        assert_int_equal(device_set_place(b, a, 0), 0);
        assert_int_equal(b->n_devices, 3);
        assert_string_equal(b->devices[0].pci_address, "0000:02:00.0");
        assert_string_equal(b->devices[0].name, "gpu0");
        assert_string_equal(b->devices[1].pci_address, "0000:03:00.0");
        assert_string_equal(b->devices[1].uuid, "GPU-5e7c9a3c-1b2d-4f4e-8a6b-0c1d2e3f4a02"); /* remembered */
        assert_string_equal(b->devices[2].pci_address, "0000:01:00.0");
        assert_string_equal(b->devices[2].name, "gpu2");
        assert_int_equal(strv_length(b->unscheduled), 1);
        assert_non_null(strstr(b->unscheduled[0], "garbage"));
        assert_non_null(strstr(b->unscheduled[0], "neither a UUID nor a PCI address"));

        /* 0000:02:00.0 goes, a card with a new UUID comes in its slot: another card, so
         * index 0 stays the gone one's. */
        put(r->proc, "driver/nvidia/gpus/0000:02:00.0/information",
            "Model: \t\t NVIDIA H100\nGPU UUID: \t GPU-00000000-1111-2222-3333-444444444444\n"
            "Bus Location: \t 0000:02:00.0\nDevice Minor: \t 1\n");
        assert_int_equal(devices_discover(r->sys, r->proc, r->dev, &c), 0);
        assert_int_equal(device_set_place(c, b, 0), 0);
        assert_int_equal(c->n_devices, 4);
        assert_true(c->devices[0].gone);
        assert_string_equal(c->devices[0].uuid, "GPU-5e7c9a3c-1b2d-4f4e-8a6b-0c1d2e3f4a01");
        assert_string_equal(c->devices[3].uuid, "GPU-00000000-1111-2222-3333-444444444444");
        assert_string_equal(c->devices[3].name, "gpu3");
}

/* [Device] sections over a placed set: a hidden card keeps its index (gone), the others
 * theirs; a declared device known by its name comes back at its index. */
static void test_place_and_declare(void **state) {
        Roots *r = *state;
        _cleanup_(device_set_freep) DeviceSet *a = NULL, *b = NULL;
        _cleanup_free_ char *err = NULL;
        char n0[] = "/dev/fpga0";
        char *nodes[] = { n0, NULL };

        put_nvidia(r, "0000:01:00.0", "NVIDIA A100", 0, 0, false);
        put_nvidia(r, "0000:02:00.0", "NVIDIA A100", 1, 0, false);
        put_nvidia(r, "0000:03:00.0", "NVIDIA A100", 2, 0, false);
        assert_int_equal(devices_discover(r->sys, r->proc, r->dev, &a), 0);
        assert_int_equal(device_set_place(a, NULL, 0), 0);
        assert_int_equal(device_set_apply(a, &(DeviceDecl) { .pci_address = "0000:02:00.0", .hide = true }, &err), 0);
        assert_int_equal(device_set_apply(a, &(DeviceDecl) { .name = "fpga0", .nodes = nodes }, &err), 0);
        assert_int_equal(device_set_place(a, NULL, 0), 0);
        assert_int_equal(device_set_finish(a), 0);
        assert_int_equal(a->n_devices, 4);
        assert_true(a->devices[1].gone);
        assert_string_equal(a->devices[2].name, "gpu2");
        assert_string_equal(a->devices[2].pci_address, "0000:03:00.0");
        assert_string_equal(a->devices[3].name, "fpga0");
        assert_string_equal(device_key(&a->devices[3]), "fpga0");

        /* Next reload: fpga0 declared again, the hidden card shown again. */
        assert_int_equal(devices_discover(r->sys, r->proc, r->dev, &b), 0);
        assert_int_equal(device_set_place(b, a, 0), 0);
        assert_true(b->devices[3].gone);
        assert_int_equal(device_set_apply(b, &(DeviceDecl) { .name = "fpga0", .nodes = nodes }, &err), 0);
        assert_int_equal(device_set_finish(b), 0);
        assert_int_equal(b->n_devices, 4);
        assert_false(b->devices[1].gone);
        assert_string_equal(b->devices[1].pci_address, "0000:02:00.0");
        assert_false(b->devices[3].gone);
        assert_string_equal(b->devices[3].name, "fpga0");

        /* A declared device with a PCI address of its own (a card discovery cannot read,
         * declared whole): at the next reload its placeholder has that address, and it is
         * declared again all the same: back, not gone. */
        {
                _cleanup_(device_set_freep) DeviceSet *c = NULL, *d = NULL;
                DeviceDecl decl = { .name = "gpux", .vendor = "nvidia", .pci_address = "0000:3b:00.0", .nodes = nodes };

                assert_int_equal(devices_discover(r->sys, r->proc, r->dev, &c), 0);
                assert_int_equal(device_set_place(c, b, 0), 0);
                assert_int_equal(device_set_apply(c, &decl, &err), 0);
                assert_int_equal(device_set_finish(c), 0);
                assert_int_equal(c->n_devices, 5);
                assert_false(c->devices[4].gone);
                assert_int_equal(devices_discover(r->sys, r->proc, r->dev, &d), 0);
                assert_int_equal(device_set_place(d, c, 0), 0);
                assert_true(d->devices[4].gone);
                assert_int_equal(device_set_apply(d, &decl, &err), 0);
                assert_int_equal(device_set_finish(d), 0);
                assert_false(d->devices[4].gone);
                assert_string_equal(d->devices[4].name, "gpux");
                assert_true(device_is_schedulable(&d->devices[4]));

                /* Declared again without that address (another configuration): back all
                 * the same, its address the declaration's (none). */
                _cleanup_(device_set_freep) DeviceSet *e = NULL;
                DeviceDecl bare = { .name = "gpux", .vendor = "nvidia", .nodes = nodes };

                assert_int_equal(devices_discover(r->sys, r->proc, r->dev, &e), 0);
                assert_int_equal(device_set_place(e, d, 0), 0);
                assert_true(e->devices[4].gone);
                assert_int_equal(device_set_apply(e, &bare, &err), 0);
                assert_int_equal(device_set_finish(e), 0);
                assert_false(e->devices[4].gone);
                assert_null(e->devices[4].pci_address);
        }
}

/* The fence on an NVIDIA host: a vanished card's node (its procfs entry gone, its node
 * still there), the MIG capabilities, NVIDIA's DRM nodes and the NVSwitch nodes are
 * withheld from the base; another driver's DRM node is not. */
static void test_fence_nvidia_nodes(void **state) {
        Roots *r = *state;
        _cleanup_(device_set_freep) DeviceSet *s = NULL;
        _cleanup_strv_free_ char **allow = NULL;

        if (mknodat(r->dev, "null", S_IFCHR | 0666, makedev(1, 3)) < 0) {
                skip(); /* not root */
                return;
        }
        assert_int_equal(mkdirat(r->dev, "dri", 0755), 0);
        assert_int_equal(mkdirat(r->dev, "nvidia-caps", 0755), 0);
        assert_int_equal(mknodat(r->dev, "nvidia0", S_IFCHR | 0666, makedev(195, 0)), 0); /* gone */
        assert_int_equal(mknodat(r->dev, "nvidia1", S_IFCHR | 0666, makedev(195, 1)), 0);
        assert_int_equal(mknodat(r->dev, "nvidiactl", S_IFCHR | 0666, makedev(195, 255)), 0);
        assert_int_equal(mknodat(r->dev, "nvidia-modeset", S_IFCHR | 0666, makedev(195, 254)), 0);
        assert_int_equal(mknodat(r->dev, "nvidia-uvm", S_IFCHR | 0666, makedev(511, 0)), 0);
        assert_int_equal(mknodat(r->dev, "nvidia-caps/nvidia-cap1", S_IFCHR | 0400, makedev(509, 1)), 0);
        assert_int_equal(mknodat(r->dev, "nvidia-caps/nvidia-cap2", S_IFCHR | 0444, makedev(509, 2)), 0);
        assert_int_equal(mknodat(r->dev, "nvidia-nvswitch0", S_IFCHR | 0666, makedev(508, 0)), 0);
        assert_int_equal(mknodat(r->dev, "nvidia-nvswitchctl", S_IFCHR | 0666, makedev(508, 255)), 0);
        assert_int_equal(mknodat(r->dev, "dri/card0", S_IFCHR | 0660, makedev(226, 0)), 0);       /* an iGPU */
        assert_int_equal(mknodat(r->dev, "dri/card1", S_IFCHR | 0660, makedev(226, 1)), 0);       /* NVIDIA's */
        assert_int_equal(mknodat(r->dev, "dri/renderD129", S_IFCHR | 0660, makedev(226, 129)), 0); /* NVIDIA's */
        put(r->proc, "devices",
            "Character devices:\n"
            "  1 mem\n"
            "195 nvidia-frontend\n"
            "226 drm\n"
            "508 nvidia-nvswitch\n"
            "509 nvidia-caps\n"
            "511 nvidia-uvm\n");
        /* The DRM class devices, as nvidia-drm registers them: the NVIDIA card's by its PCI
         * function's vendor 0x10de, the iGPU's 0x8086. */
        put(r->sys, "bus/pci/devices/0000:00:02.0/vendor", "0x8086\n");
        put(r->sys, "bus/pci/devices/0000:02:00.0/vendor", "0x10de\n");
        put_link(r->sys, "class/drm/card0", "../../devices/pci0000:00/0000:00:02.0/drm/card0");
        put_link(r->sys, "devices/pci0000:00/0000:00:02.0/drm/card0/device", "../../../../../bus/pci/devices/0000:00:02.0");
        put_link(r->sys, "class/drm/card1", "../../devices/pci0000:00/0000:02:00.0/drm/card1");
        put_link(r->sys, "devices/pci0000:00/0000:02:00.0/drm/card1/device", "../../../../../bus/pci/devices/0000:02:00.0");
        put_link(r->sys, "class/drm/renderD129", "../../devices/pci0000:00/0000:02:00.0/drm/renderD129");
        put_link(r->sys, "devices/pci0000:00/0000:02:00.0/drm/renderD129/device",
                 "../../../../../bus/pci/devices/0000:02:00.0");
        put_nvidia_info(r, "0000:02:00.0", "NVIDIA A100", 1, 0, false);
        assert_int_equal(devices_discover(r->sys, r->proc, r->dev, &s), 0);
        assert_int_equal(s->n_devices, 1);
        assert_int_equal(device_set_finish(s), 0);

        assert_int_equal(FENCE_BASE(r, s, &allow), 0);
        assert_false(strv_contains(allow, "/dev/nvidia0"));
        assert_false(strv_contains(allow, "char-nvidia-nvswitch"));
        assert_false(strv_contains(allow, "char-drm"));
        assert_true(strv_contains(allow, "char-mem"));
        assert_true(strv_contains(allow, "/dev/dri/card0"));
        assert_false(strv_contains(allow, "/dev/dri/card1"));
        assert_false(strv_contains(allow, "/dev/dri/renderD129"));
        assert_false(strv_contains(allow, "/dev/nvidia0"));
        assert_false(strv_contains(allow, "/dev/nvidia1"));
        assert_false(strv_contains(allow, "/dev/nvidia-modeset"));
        assert_false(strv_contains(allow, "char-nvidia-caps"));
        assert_false(strv_contains(allow, "/dev/nvidia-caps/nvidia-cap1"));
        assert_false(strv_contains(allow, "char-nvidia-nvswitch"));
        assert_false(strv_contains(allow, "/dev/nvidia-nvswitch0"));
        assert_false(strv_contains(allow, "/dev/nvidia-nvswitchctl"));
        /* The caps are no job's shared nodes either. */
        assert_false(strv_contains(s->shared_nodes[DEVICE_VENDOR_NVIDIA], "/dev/nvidia-caps/nvidia-cap1"));
}


/* The capability files of one MIG device, as the driver writes them. */
static int discover_all(Roots *r, DeviceSet **ret) {
        int k = devices_discover(r->sys, r->proc, r->dev, ret);
        return k < 0 ? k : devices_discover_mig(r->proc, *ret);
}

static void put_mig(Roots *r, unsigned gpu, unsigned gi, unsigned ci, unsigned gi_minor, unsigned ci_minor) {
        char path[256], text[128];

        (void) snprintf(path, sizeof path, "driver/nvidia/capabilities/gpu%u/mig/gi%u/access", gpu, gi);
        (void) snprintf(text, sizeof text, "DeviceFileMinor: %u\nDeviceFileMode: 292\nDeviceFileModify: 1\n", gi_minor);
        put(r->proc, path, text);
        (void) snprintf(path, sizeof path, "driver/nvidia/capabilities/gpu%u/mig/gi%u/ci%u/access", gpu, gi, ci);
        (void) snprintf(text, sizeof text, "DeviceFileMinor: %u\nDeviceFileMode: 292\nDeviceFileModify: 1\n", ci_minor);
        put(r->proc, path, text);
}

/* An A100 in MIG mode with a 3g and two 1g instances (one whose access files are gone but
 * which the driver's mig-minors table names), and one whole A100: four GPUs to schedule,
 * the MIG devices after the cards, each with its GPU's node and its two capability nodes,
 * its GPU's NUMA node, and Slurm's "MIG-<GPU UUID>/GI/CI" as its identity; the GPU in MIG
 * mode given to nobody whole. */
static void test_mig_discovery(void **state) {
        Roots *r = *state;
        _cleanup_(device_set_freep) DeviceSet *s = NULL, *again = NULL;
        const Device *d;

        put_nvidia(r, "0000:3b:00.0", "NVIDIA A100-SXM4-40GB", 0, 1, false);
        put_nvidia(r, "0000:5e:00.0", "NVIDIA A100-SXM4-40GB", 1, 0, false);
        put_mig(r, 0, 2, 0, 21, 22);   /* 3g.20gb */
        put_mig(r, 0, 9, 0, 84, 85);   /* 1g.5gb */
        put(r->proc, "driver/nvidia/capabilities/gpu0/mig/gi10/ci0/.keep", "");
        put(r->proc, "driver/nvidia-caps/mig-minors",
            "config 1\nmonitor 2\ngpu0/gi10/access 93\ngpu0/gi10/ci0/access 94\ngpu0/gi11/access 102\n");
        put(r->proc, "driver/nvidia/capabilities/gpu0/mig/gi12/ci0/access", "DeviceFileMode: 292\n"); /* broken */
        put(r->proc, "driver/nvidia/capabilities/gpu0/mig/config", "DeviceFileMinor: 1\n");
        assert_int_equal(discover_all(r, &s), 0);
        assert_int_equal(device_set_place(s, NULL, 0), 0);
        assert_int_equal(s->n_devices, 5);

        assert_string_equal(s->devices[0].pci_address, "0000:3b:00.0");
        assert_true(s->devices[0].mig_mode);
        assert_false(device_is_schedulable(&s->devices[0]));
        assert_false(s->devices[1].mig_mode);
        assert_true(device_is_schedulable(&s->devices[1]));

        d = &s->devices[2];
        assert_true(d->mig);
        assert_true(device_is_schedulable(d));
        assert_null(d->pci_address);
        assert_string_equal(d->name, "gpu2");
        assert_int_equal(d->mig_gi, 2);
        assert_int_equal(d->mig_ci, 0);
        assert_int_equal(d->numa_node, 1);
        assert_string_equal(d->uuid, "MIG-GPU-5e7c9a3c-1b2d-4f4e-8a6b-0c1d2e3f4a00/2/0");
        assert_string_equal(d->mig_parent, "GPU-5e7c9a3c-1b2d-4f4e-8a6b-0c1d2e3f4a00");
        assert_int_equal(strv_length(d->nodes), 3);
        assert_string_equal(d->nodes[0], "/dev/nvidia0");
        assert_string_equal(d->nodes[1], "/dev/nvidia-caps/nvidia-cap21");
        assert_string_equal(d->nodes[2], "/dev/nvidia-caps/nvidia-cap22");
        assert_true(strv_contains(d->features, "mig"));
        assert_false(strv_contains(d->features, "a100"));
        assert_int_equal(s->devices[3].mig_gi, 9);
        assert_string_equal(s->devices[3].nodes[2], "/dev/nvidia-caps/nvidia-cap85");
        /* From the driver's table where the access files are not there. */
        assert_int_equal(s->devices[4].mig_gi, 10);
        assert_string_equal(s->devices[4].nodes[1], "/dev/nvidia-caps/nvidia-cap93");
        assert_string_equal(s->devices[4].nodes[2], "/dev/nvidia-caps/nvidia-cap94");
        assert_null(device_mig_cuda_id(d)); /* until NVML names it */

        /* Read again, the same layout: the same indexes, and what NVML said of a MIG
         * device kept until it says it again. */
        assert_int_equal(devices_mig_update(&s->devices[2], "MIG-7a8b0c1d-0000-5000-8000-000000000002", "3g.20gb",
                                            20ULL << 30), 1);
        assert_int_equal(discover_all(r, &again), 0);
        assert_int_equal(device_set_place(again, s, 0), 0);
        assert_int_equal(again->n_devices, 5);
        for (size_t i = 0; i < 5; i++)
                assert_string_equal(device_key(&again->devices[i]), device_key(&s->devices[i]));
        assert_string_equal(again->devices[2].mig_profile, "3g.20gb");
        assert_string_equal(again->devices[2].mig_uuid, "MIG-7a8b0c1d-0000-5000-8000-000000000002");
        assert_true(device_matches(&again->devices[2], "3g.20gb", NULL));
        assert_null(again->devices[3].mig_profile);
}

/* An instance destroyed under a job (re-sliced by an admin): read again, its index stays
 * a gone placeholder that keeps its GPU, and a new instance takes a new index. */
static void test_mig_relayout(void **state) {
        Roots *r = *state;
        _cleanup_(device_set_freep) DeviceSet *a = NULL, *b = NULL;

        put_nvidia(r, "0000:3b:00.0", "NVIDIA H100 80GB HBM3", 0, 0, false);
        put_mig(r, 0, 1, 0, 12, 13);
        put_mig(r, 0, 2, 0, 21, 22);
        assert_int_equal(discover_all(r, &a), 0);
        assert_int_equal(device_set_place(a, NULL, 0), 0);
        assert_int_equal(a->n_devices, 3);

        assert_int_equal(unlinkat(r->proc, "driver/nvidia/capabilities/gpu0/mig/gi2/ci0/access", 0), 0);
        assert_int_equal(unlinkat(r->proc, "driver/nvidia/capabilities/gpu0/mig/gi2/ci0", AT_REMOVEDIR), 0);
        put_mig(r, 0, 3, 0, 30, 31);
        assert_int_equal(discover_all(r, &b), 0);
        assert_int_equal(device_set_place(b, a, 0), 0);
        assert_int_equal(b->n_devices, 4);
        assert_true(b->devices[2].gone);
        assert_true(b->devices[2].mig);
        assert_string_equal(b->devices[2].mig_parent, "GPU-5e7c9a3c-1b2d-4f4e-8a6b-0c1d2e3f4a00");
        assert_string_equal(b->devices[3].uuid, "MIG-GPU-5e7c9a3c-1b2d-4f4e-8a6b-0c1d2e3f4a00/3/0");
        assert_true(device_is_schedulable(&b->devices[1]));
}

/* What NVML adds: the profile makes the type, as Slurm spells it; an A100's model does not
 * match its slices; the share of the GPU it is charged. */
static void test_mig_profile_and_share(void **state) {
        Device d = { .vendor = DEVICE_VENDOR_NVIDIA, .mig = true, .name = (char *) "gpu8",
                     .model = (char *) "NVIDIA A100-SXM4-40GB" };
        unsigned k, n;

        d.model = strdup("NVIDIA A100-SXM4-40GB");
        d.name = strdup("gpu8");
        assert_int_equal(device_derive_features(&d), 0);
        assert_false(device_matches(&d, "1g.5gb", NULL));
        device_compute_share(&d, &k, &n);
        assert_int_equal(k, 1); /* profile unknown: charged whole */
        assert_int_equal(n, 1);
        assert_int_equal(devices_mig_update(&d, "MIG-7a8b0c1d-0000-5000-8000-000000000001", "1g.5gb", 4ULL << 30), 1);
        assert_int_equal(devices_mig_update(&d, "MIG-7a8b0c1d-0000-5000-8000-000000000001", "1g.5gb", 4ULL << 30), 0);
        assert_string_equal(device_mig_cuda_id(&d), "MIG-7a8b0c1d-0000-5000-8000-000000000001");
        assert_true(device_matches(&d, "1g.5gb", NULL));
        assert_true(device_matches(&d, "1G.5GB", NULL));
        assert_true(device_matches(&d, "a100_1g.5gb", NULL));
        assert_true(device_matches(&d, "nvidia_a100-sxm4-40gb_1g.5gb", NULL));
        assert_true(device_matches(&d, "mig", NULL));
        assert_true(device_matches(&d, NULL, NULL));
        assert_true(device_matches(&d, NULL, "mig&1g.5gb"));
        assert_false(device_matches(&d, "a100", NULL));
        assert_false(device_matches(&d, "3g.20gb", NULL));
        assert_false(device_matches(&d, "nvidia_a100-sxm4-40gb", NULL));
        device_compute_share(&d, &k, &n);
        assert_int_equal(k, 1);
        assert_int_equal(n, 7);
        assert_int_equal(devices_mig_update(&d, NULL, "3g.20gb", 0), 1);
        device_compute_share(&d, &k, &n);
        assert_int_equal(k, 3);
        assert_int_equal(n, 7);
        assert_int_equal(devices_mig_update(&d, NULL, "1c.3g.20gb", 0), 1);
        device_compute_share(&d, &k, &n);
        assert_int_equal(k, 1);
        assert_int_equal(n, 7);
        free(d.model);
        d.model = strdup("NVIDIA A30");
        assert_int_equal(devices_mig_update(&d, NULL, "2g.12gb", 0), 1);
        device_compute_share(&d, &k, &n);
        assert_int_equal(k, 2);
        assert_int_equal(n, 4);
        /* A whole GPU is all of itself. */
        Device whole = { .vendor = DEVICE_VENDOR_NVIDIA };
        device_compute_share(&whole, &k, &n);
        assert_int_equal(k, 1);
        assert_int_equal(n, 1);
        device_done(&d);
}

/* Discovered cards (gpu0, gpu1) gone, then a [Device] section declaring gpu0 (a test's fake
 * GPU after a machine's real ones, or an admin's device after the cards were pulled): the
 * declaration is a device of its own, schedulable, at a new index; the gone card keeps its
 * index under another name. */
static void test_declared_over_gone_name(void **state) {
        Roots *r = *state;
        _cleanup_(device_set_freep) DeviceSet *a = NULL, *b = NULL;
        _cleanup_free_ char *err = NULL;
        char n0[] = "/dev/nvidia0";
        char *nodes[] = { n0, NULL };
        const Device *d;

        put_nvidia(r, "0000:01:00.0", "NVIDIA A100", 0, 0, false);
        put_nvidia(r, "0000:02:00.0", "NVIDIA A100", 1, 0, false);
        assert_int_equal(devices_discover(r->sys, r->proc, r->dev, &a), 0);
        assert_int_equal(device_set_place(a, NULL, 0), 0);
        assert_int_equal(device_set_finish(a), 0);
        assert_string_equal(a->devices[0].name, "gpu0");

        assert_int_equal(unlinkat(r->proc, "driver/nvidia/gpus/0000:01:00.0/information", 0), 0);
        assert_int_equal(unlinkat(r->proc, "driver/nvidia/gpus/0000:01:00.0", AT_REMOVEDIR), 0);
        assert_int_equal(unlinkat(r->proc, "driver/nvidia/gpus/0000:02:00.0/information", 0), 0);
        assert_int_equal(unlinkat(r->proc, "driver/nvidia/gpus/0000:02:00.0", AT_REMOVEDIR), 0);
        assert_int_equal(devices_discover(r->sys, r->proc, r->dev, &b), 0);
        assert_int_equal(device_set_place(b, a, 0), 0);
        assert_int_equal(device_set_apply(b, &(DeviceDecl) { .name = "gpu0", .vendor = "nvidia", .nodes = nodes,
                                                              .pci_address = "0000:01:00.0", .shards = 2,
                                                              .shards_set = true }, &err), 0);
        /* An override of the other gone card (no Nodes=) does not bring it back. */
        assert_int_equal(device_set_apply(b, &(DeviceDecl) { .name = "gpu1", .shards = 4, .shards_set = true }, &err), 0);
        assert_true(device_set_find(b, "gpu1")->gone);
        assert_int_equal(device_set_finish(b), 0);
        d = device_set_find(b, "gpu0");
        assert_non_null(d);
        assert_true(device_is_schedulable(d));
        assert_null(d->uuid);
        assert_int_equal(d->shards, 2);
        assert_int_equal(d - b->devices, 2);
        assert_true(b->devices[0].gone);
        assert_string_equal(b->devices[0].name, "gpu0-gone");
        assert_string_equal(b->devices[0].uuid, "GPU-5e7c9a3c-1b2d-4f4e-8a6b-0c1d2e3f4a00");
}

#define T(f) cmocka_unit_test_setup_teardown(f, roots_setup, roots_teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                T(test_nvidia_eight_on_two_nodes),
                T(test_nvidia_excluded_and_broken),
                T(test_amd),
                T(test_none),
                cmocka_unit_test(test_model_token),
                T(test_declare_override_hide),
                cmocka_unit_test(test_matches),
                T(test_fence_base),
                T(test_card_removed),
                T(test_card_added_and_identity),
                T(test_place_and_declare),
                T(test_fence_nvidia_nodes),
                T(test_declared_over_gone_name),
                T(test_mig_discovery),
                T(test_mig_relayout),
                cmocka_unit_test(test_mig_profile_and_share),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
