/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config-lastgood.h"
#include "errno-util.h"
#include "fd-util.h"
#include "strv.h"

#define LASTGOOD_NEW CONFIG_LASTGOOD_DIR ".new"
/* What ini_load() reads at most of one file. */
#define CONFIG_FILE_MAX (1024 * 1024)

/* The drop-in folders the loader reads, each for its *.conf files. */
static const char *const subdirs[] = { "corral.conf.d", "projects.d" };

static bool is_conf_name(const char *n) {
        size_t len = strlen(n);
        return n[0] != '.' && len > 5 && streq(n + len - 5, ".conf");
}

/* Removes what save() makes: files, and folders of files, one level down. */
static int remove_tree_at(int at, const char *name) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int r;

        r = opendir_at(at, name, O_NOFOLLOW, &d);
        if (r < 0)
                return r == -ENOENT ? 0 : r;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (unlinkat(dirfd(d), de->d_name, 0) < 0) {
                        if (errno != EISDIR && errno != EPERM)
                                return negative_errno();
                        r = remove_tree_at(dirfd(d), de->d_name);
                        if (r < 0)
                                return r;
                }
        }
        return RET_NERRNO(unlinkat(at, name, AT_REMOVEDIR));
}

static int copy_file(int from_dir, int to_dir, const char *name) {
        _cleanup_free_ char *text = NULL;
        _cleanup_close_ int fd = -EBADF;
        size_t n;
        int r;

        r = read_file_at(from_dir, name, CONFIG_FILE_MAX, &text, &n);
        if (r < 0)
                return r;
        /* Only corrald reads the copy: the project files may not be everyone's to read. */
        fd = openat(to_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return negative_errno();
        r = loop_write(fd, text, n);
        if (r < 0)
                return r;
        return RET_NERRNO(fsync(fd));
}

/* Copies the *.conf files of from_dir/sub (missing: nothing) into to_dir/sub. */
static int copy_subdir(int from_dir, int to_dir, const char *sub) {
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_close_ int to = -EBADF;
        struct dirent *de;
        int r;

        r = opendir_at(from_dir, sub, 0, &d);
        if (r < 0)
                return r == -ENOENT ? 0 : r;
        if (mkdirat(to_dir, sub, 0700) < 0)
                return negative_errno();
        to = openat(to_dir, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (to < 0)
                return negative_errno();
        while ((de = readdir(d)))
                if (is_conf_name(de->d_name) && (r = copy_file(dirfd(d), to, de->d_name)) < 0)
                        return r;
        return RET_NERRNO(fsync(to));
}

static int path_join(const char *a, const char *b, char **ret) {
        return asprintf(ret, "%s/%s", a, b) < 0 ? -ENOMEM : 0;
}

int config_lastgood_save(const char *statedir, const char *confdir) {
        _cleanup_close_ int state = -EBADF, conf = -EBADF, tmp = -EBADF;
        _cleanup_(config_freep) Config *check = NULL;
        _cleanup_free_ char *tmp_path = NULL, *error = NULL;
        int r;

        if (mkdir(statedir, 0700) < 0 && errno != EEXIST)
                return negative_errno();
        state = open(statedir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        conf = open(confdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (state < 0 || conf < 0)
                return negative_errno();

        r = remove_tree_at(state, LASTGOOD_NEW); /* left by a crash half way */
        if (r < 0)
                return r;
        if (mkdirat(state, LASTGOOD_NEW, 0700) < 0)
                return negative_errno();
        tmp = openat(state, LASTGOOD_NEW, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (tmp < 0)
                return negative_errno();
        r = copy_file(conf, tmp, "corral.conf");
        if (r == -ENOENT) /* no corral.conf: the defaults, as config_load() takes it */
                r = 0;
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(subdirs); i++)
                r = copy_subdir(conf, tmp, subdirs[i]);
        if (r >= 0)
                r = RET_NERRNO(fsync(tmp));
        /* What was copied is what is on disk now, not necessarily what was loaded: keep it
         * only if it loads. */
        if (r >= 0 && (r = path_join(statedir, LASTGOOD_NEW, &tmp_path)) >= 0)
                r = config_load(tmp_path, &check, &error);
        if (r < 0) {
                (void) remove_tree_at(state, LASTGOOD_NEW);
                return r;
        }
        /* Swapped whole: a crash leaves the old copy or the new one, never half of each. */
        if (renameat2(state, LASTGOOD_NEW, state, CONFIG_LASTGOOD_DIR, RENAME_EXCHANGE) >= 0)
                r = remove_tree_at(state, LASTGOOD_NEW);
        else if (errno == ENOENT)
                r = RET_NERRNO(renameat(state, LASTGOOD_NEW, state, CONFIG_LASTGOOD_DIR));
        else
                r = negative_errno();
        if (r < 0)
                return r;
        return RET_NERRNO(fsync(state));
}

int config_lastgood_load(const char *statedir, Config **ret, char **ret_error, uint64_t *ret_saved) {
        _cleanup_free_ char *path = NULL;
        struct stat st;
        int r;

        *ret_error = NULL;
        r = path_join(statedir, CONFIG_LASTGOOD_DIR, &path);
        if (r < 0)
                return r;
        if (stat(path, &st) < 0)
                return negative_errno();
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        r = config_load(path, ret, ret_error);
        if (r < 0)
                return r;
        if (ret_saved)
                *ret_saved = (uint64_t) st.st_mtime;
        return 0;
}
