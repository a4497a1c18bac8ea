/* SPDX-License-Identifier: GPL-2.0-or-later */
/* corrald's configuration loader with drop-ins and project files. The input is cut at
 * lines "----" into corral.conf, corral.conf.d/10-site.conf, corral.conf.d/20-local.conf,
 * projects.d/physics.conf and projects.d/biology.conf (an absent part removes its file),
 * written into one scratch directory per process, and loaded. A load that succeeds must
 * give a usable configuration; one that fails must say why. */

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "fuzz.h"
#include "strv.h"

static const char *const files[] = {
        "corral.conf", "corral.conf.d/10-site.conf", "corral.conf.d/20-local.conf",
        "projects.d/physics.conf", "projects.d/biology.conf",
};
static char dir[512];
static int dirfd_ = -1;

static void cleanup(void) {
        for (size_t i = 0; i < ELEMENTSOF(files); i++)
                (void) unlinkat(dirfd_, files[i], 0);
        (void) unlinkat(dirfd_, "corral.conf.d", AT_REMOVEDIR);
        (void) unlinkat(dirfd_, "projects.d", AT_REMOVEDIR);
        (void) rmdir(dir);
}

static void setup_once(void) {
        const char *tmp = getenv("TMPDIR");

        if (dirfd_ >= 0)
                return;
        snprintf(dir, sizeof dir, "%s/fuzz-config.XXXXXX", tmp && strlen(tmp) < 256 ? tmp : "/tmp");
        fuzz_check(mkdtemp(dir));
        dirfd_ = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        fuzz_check(dirfd_ >= 0);
        fuzz_check(mkdirat(dirfd_, "corral.conf.d", 0700) == 0);
        fuzz_check(mkdirat(dirfd_, "projects.d", 0700) == 0);
        atexit(cleanup);
}

static void put(const char *name, const uint8_t *p, size_t n) {
        int fd = openat(dirfd_, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        fuzz_check(fd >= 0);
        fuzz_check(write(fd, p, n) == (ssize_t) n);
        close(fd);
}

static const uint8_t *find_separator(const uint8_t *p, const uint8_t *end) {
        static const char sep[] = "\n----\n";

        for (; (size_t) (end - p) >= sizeof sep - 1; p++)
                if (memcmp(p, sep, sizeof sep - 1) == 0)
                        return p;
        return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const uint8_t *p = data, *end = data + size;
        _cleanup_(config_freep) Config *c = NULL;
        _cleanup_free_ char *error = NULL;
        int r;

        setup_once();
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                const uint8_t *sep = i + 1 < ELEMENTSOF(files) && p ? find_separator(p, end) : NULL;

                if (!p) {
                        (void) unlinkat(dirfd_, files[i], 0);
                        continue;
                }
                put(files[i], p, (size_t) ((sep ?: end) - p));
                p = sep ? sep + 6 : NULL;
        }

        r = config_load(dir, &c, &error);
        if (r < 0) {
                fuzz_check(r == -ENOMEM || error);
                return 0;
        }
        fuzz_check(!error && c);
        fuzz_check(c->n_queues >= 1);
        fuzz_check(c->default_queue && config_find_queue(c, c->default_queue));
        for (size_t i = 0; i < c->n_queues; i++) {
                fuzz_check(c->queues[i].name);
                fuzz_check(config_find_queue(c, c->queues[i].name) == &c->queues[i]); /* names are unique */
                fuzz_check(!c->queues[i].disabled); /* Disabled=yes removed it */
                if (!queue_config_allows(&c->queues[i], "physics", (char *[]) { (char *) "physics", NULL })) {
                        _cleanup_free_ char *why = NULL;
                        r = queue_config_refusal(&c->queues[i], "physics", &why);
                        fuzz_check(r == -ENOMEM || (r == 0 && why));
                }
        }
        STRV_FOREACH(q, c->removed_builtins)
                fuzz_check(!config_find_queue(c, *q));
        for (size_t i = 0; i < c->n_projects; i++) {
                static const char *const groups[] = { "physics", NULL };

                fuzz_check(c->projects[i].name);
                fuzz_check(config_find_project(c, c->projects[i].name) == &c->projects[i]);
                (void) project_has_member(&c->projects[i], "alice", groups);
                (void) project_allows_queue(&c->projects[i], c->default_queue);
        }
        SchedConfig s;
        fuzz_check(config_sched(c, &s) == 0);
        return 0;
}
