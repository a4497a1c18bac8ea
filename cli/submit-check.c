/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A job that cannot enter its directory or open its files fails at launch, maybe hours
 * later and with the reason only in `corral show`: say it at submission instead. */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "submit-check.h"

/* The path as root_fd sees it: absolute paths lose their leading slashes under a tmpdir. */
static const char *under_root(const char *p, int root_fd) {
        if (root_fd == AT_FDCWD)
                return p;
        p += strspn(p, "/");
        return *p ? p : ".";
}

static int fail(char **ret_error, int error, const char *what, const char *path) {
        if (asprintf(ret_error, "%s %s: %s", what, path, strerror(error)) < 0) {
                *ret_error = NULL;
                return -ENOMEM;
        }
        return -error;
}

static int check_dir(int root_fd, const char *path, int mode) {
        struct stat st;

        if (fstatat(root_fd, under_root(path, root_fd), &st, 0) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        if (faccessat(root_fd, under_root(path, root_fd), mode, 0) < 0)
                return -errno;
        return 0;
}

/* An existing file must be writable (readable); a new one needs a directory it can be
 * made in. */
static int check_file(int root_fd, const char *workdir, const char *path, bool write, const char *what,
                      char **ret_error) {
        _cleanup_free_ char *abs = NULL, *dir = NULL;
        const char *slash;
        struct stat st;
        int r;

        if (path[0] != '/') {
                if (asprintf(&abs, "%s/%s", workdir, path) < 0)
                        return -ENOMEM;
                path = abs;
        }
        slash = strrchr(path, '/');
        dir = slash == path ? strdup("/") : strndup(path, (size_t) (slash - path));
        if (!dir)
                return -ENOMEM;
        if (strchr(dir, '%'))
                return 0; /* expanded per job by corrald */

        if (!strchr(slash, '%') && fstatat(root_fd, under_root(path, root_fd), &st, 0) >= 0) {
                if (S_ISDIR(st.st_mode))
                        return fail(ret_error, EISDIR, what, path);
                if (faccessat(root_fd, under_root(path, root_fd), write ? W_OK : R_OK, 0) < 0)
                        return fail(ret_error, errno, what, path);
                return 0;
        }
        if (!write) {
                if (strchr(slash, '%'))
                        return 0;
                return fail(ret_error, ENOENT, what, path);
        }
        r = check_dir(root_fd, dir, W_OK | X_OK);
        if (r < 0)
                return fail(ret_error, -r, what, path);
        return 0;
}

int submit_check_paths(const SubmitRequest *req, int root_fd, char **ret_error) {
        int r;

        assert(req);
        assert(ret_error);

        *ret_error = NULL;
        /* finalize() made it absolute; without one corrald's own rules apply. */
        if (!req->workdir || req->workdir[0] != '/')
                return 0;
        r = check_dir(root_fd, req->workdir, X_OK);
        if (r < 0)
                return fail(ret_error, -r, "cannot change to the working directory", req->workdir);
        if (req->stdin_path) {
                r = check_file(root_fd, req->workdir, req->stdin_path, false, "cannot open the input file",
                               ret_error);
                if (r < 0)
                        return r;
        }
        if (req->stdout_path) {
                r = check_file(root_fd, req->workdir, req->stdout_path, true, "cannot open the output file",
                               ret_error);
                if (r < 0)
                        return r;
        }
        if (req->stderr_path && !(req->stdout_path && streq(req->stderr_path, req->stdout_path))) {
                r = check_file(root_fd, req->workdir, req->stderr_path, true, "cannot open the error file",
                               ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}
