/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errno-util.h"
#include "fd-closer.h"
#include "fd-util.h"
#include "log.h"
#include "macro.h"

#define FUSECTL_PATH "/sys/fs/fuse/connections"
/* A close still waiting this long after the abort is one the abort could not end (a file
 * of another user's FUSE, a hard NFS mount that lost its server): its thread is left to
 * it and another serves the queue, FD_CLOSER_THREADS_MAX threads at the most. */
#define FD_CLOSER_ABANDON_USEC (2 * FD_CLOSER_STUCK_USEC)
#define FD_CLOSER_THREADS_MAX 16U

typedef struct Pending {
        int fd;
        uid_t uid;
} Pending;

typedef struct Worker {
        FdCloser *closer;
        pthread_t thread;
        /* Under the closer's lock: the close under way, if any. */
        bool busy, abandoned, exited;
        uid_t uid;
        uint64_t since;
        bool abort_tried;
} Worker;

struct FdCloser {
        sd_event_source *watch; /* while descriptors wait: is a close stuck? */
        int fusectl_fd;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        /* Under lock: the queue, [head, n) still to close; the threads. */
        Pending *queue;
        size_t head, n, allocated;
        Worker *workers[FD_CLOSER_THREADS_MAX];
        unsigned n_workers;
        bool stop;
};

/* A socket's linger would make its last close wait for its peer: off, as by default. */
static void close_now(int fd) {
        static const struct linger off = {};

        (void) setsockopt(fd, SOL_SOCKET, SO_LINGER, &off, sizeof off);
        safe_close(fd);
}

static void *closer_thread(void *userdata) {
        Worker *w = userdata;
        FdCloser *c = w->closer;

        pthread_mutex_lock(&c->lock);
        for (;;) {
                Pending p;

                while (c->head == c->n && !c->stop && !w->abandoned)
                        pthread_cond_wait(&c->cond, &c->lock);
                if (c->head == c->n || w->abandoned)
                        break;
                p = c->queue[c->head++];
                if (c->head == c->n)
                        c->head = c->n = 0;
                w->busy = true;
                w->uid = p.uid;
                w->since = now_usec(CLOCK_MONOTONIC);
                w->abort_tried = false;
                pthread_mutex_unlock(&c->lock);
                close_now(p.fd);
                pthread_mutex_lock(&c->lock);
                w->busy = false;
        }
        w->exited = true;
        pthread_mutex_unlock(&c->lock);
        return NULL;
}

/* Under the lock. */
static int start_worker(FdCloser *c) {
        Worker *w;
        int r;

        if (c->n_workers >= FD_CLOSER_THREADS_MAX)
                return -EBUSY;
        w = new0(Worker, 1);
        if (!w)
                return -ENOMEM;
        w->closer = c;
        r = -pthread_create(&w->thread, NULL, closer_thread, w);
        if (r < 0) {
                free(w);
                return r;
        }
        c->workers[c->n_workers++] = w;
        return 0;
}

/* Opened when needed, not kept: fusectl may be mounted after corrald starts (systemd
 * mounts it when the fuse module loads), and a directory opened before would be the
 * empty one beneath. */
static int fusectl_dir(FdCloser *c) {
        if (c->fusectl_fd >= 0)
                return fcntl(c->fusectl_fd, F_DUPFD_CLOEXEC, 3);
        return open(FUSECTL_PATH, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* Called with the file system uid the connection's owner: its directory is hers alone
 * (0500), its files too (0400, 0200). */
static int abort_if_waiting(int parent_fd, const char *name) {
        _cleanup_close_ int conn = -EBADF, fd = -EBADF;
        _cleanup_free_ char *waiting = NULL;
        int r;

        conn = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (conn < 0)
                return negative_errno();
        r = read_file_at(conn, "waiting", 64, &waiting, NULL);
        if (r < 0)
                return r;
        if (atoi(waiting) <= 0)
                return 0;
        fd = openat(conn, "abort", O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        if (write(fd, "1", 1) < 0)
                return negative_errno();
        return 1;
}

int fuse_abort_user_connections(int fusectl_fd, uid_t uid) {
        _cleanup_close_ int dfd = -EBADF;
        DIR *d;
        struct dirent *de;
        int n = 0;

        if (fusectl_fd < 0)
                return -ENOENT;
        dfd = fcntl(fusectl_fd, F_DUPFD_CLOEXEC, 3);
        if (dfd < 0)
                return negative_errno();
        d = fdopendir(dfd);
        if (!d)
                return negative_errno();
        TAKE_FD(dfd);
        rewinddir(d);
        while ((de = readdir(d))) {
                struct stat st;
                int saved_uid, r;

                if (de->d_name[0] == '.' ||
                    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
                    st.st_uid != uid)
                        continue;
                /* As their owner: corrald has no CAP_DAC_OVERRIDE, and needs none to act
                 * as the owner of what it aborts. setfsuid() is this thread's alone. */
                saved_uid = setfsuid(uid);
                r = abort_if_waiting(dirfd(d), de->d_name);
                (void) setfsuid((uid_t) saved_uid);
                if (r > 0)
                        n++;
        }
        closedir(d);
        return n;
}

static void abort_for(FdCloser *c, uid_t uid, const char *when) {
        _cleanup_close_ int fusectl = fusectl_dir(c);
        int r = fuse_abort_user_connections(fusectl, uid);

        if (r > 0)
                log_warning("Closing a descriptor uid %u passed has waited %s on a FUSE file system's server: "
                            "aborted %d FUSE connection(s) of that user.", (unsigned) uid, when, r);
        else
                log_warning("Closing a descriptor uid %u passed is stuck (%s), and no FUSE connection of that "
                            "user with requests waiting could be aborted (%s).", (unsigned) uid, when,
                            r < 0 ? strerror(-r) : "none found");
}

/* On the loop: a close waiting too long is its passer's FUSE server's doing, first; if
 * aborting does not end it, its thread is left to it. Returns whether a close is under
 * way or waiting. */
static bool check_stuck(FdCloser *c, bool shutdown) {
        uid_t to_abort[FD_CLOSER_THREADS_MAX];
        unsigned n_abort = 0;
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        bool active;

        pthread_mutex_lock(&c->lock);
        active = c->head != c->n;
        for (unsigned i = 0; i < c->n_workers; i++) {
                Worker *w = c->workers[i];

                if (!w->busy)
                        continue;
                active = true;
                if (!w->abort_tried && (shutdown || now - w->since >= FD_CLOSER_STUCK_USEC)) {
                        w->abort_tried = true;
                        to_abort[n_abort++] = w->uid;
                } else if (!w->abandoned && !shutdown && now - w->since >= FD_CLOSER_ABANDON_USEC) {
                        w->abandoned = true;
                        if (start_worker(c) < 0)
                                log_error("A close of a descriptor uid %u passed has waited %u s, and no "
                                          "other thread can take over: users' descriptors wait to be closed.",
                                          (unsigned) w->uid, (unsigned) (FD_CLOSER_ABANDON_USEC / USEC_PER_SEC));
                }
        }
        pthread_mutex_unlock(&c->lock);
        for (unsigned i = 0; i < n_abort; i++)
                abort_for(c, to_abort[i], shutdown ? "at shutdown" : "5 s");
        return active;
}

static void arm_watch(FdCloser *c) {
        if (!c->watch)
                return;
        (void) sd_event_source_set_time_relative(c->watch, USEC_PER_SEC);
        (void) sd_event_source_set_enabled(c->watch, SD_EVENT_ONESHOT);
}

static int on_watch(sd_event_source *s, uint64_t usec, void *userdata) {
        FdCloser *c = userdata;

        if (check_stuck(c, false))
                arm_watch(c);
        return 0;
}

int fd_closer_new(sd_event *event, int fusectl_fd, FdCloser **ret) {
        _cleanup_free_ FdCloser *c = NULL;
        int r;

        c = new0(FdCloser, 1);
        if (!c) {
                safe_close(fusectl_fd);
                return -ENOMEM;
        }
        c->fusectl_fd = fusectl_fd;
        pthread_mutex_init(&c->lock, NULL);
        pthread_cond_init(&c->cond, NULL);
        if (event) {
                r = sd_event_add_time_relative(event, &c->watch, CLOCK_MONOTONIC, USEC_PER_SEC, USEC_PER_SEC / 4,
                                               on_watch, c);
                if (r < 0) {
                        safe_close(c->fusectl_fd);
                        return r;
                }
                (void) sd_event_source_set_enabled(c->watch, SD_EVENT_OFF);
        }
        pthread_mutex_lock(&c->lock);
        r = start_worker(c);
        pthread_mutex_unlock(&c->lock);
        if (r < 0) {
                sd_event_source_disable_unref(c->watch);
                safe_close(c->fusectl_fd);
                return r;
        }
        *ret = TAKE_PTR(c);
        return 0;
}

FdCloser *fd_closer_free(FdCloser *c) {
        bool stuck = false;

        if (!c)
                return NULL;
        pthread_mutex_lock(&c->lock);
        c->stop = true;
        pthread_cond_broadcast(&c->cond);
        pthread_mutex_unlock(&c->lock);
        /* corrald is going: a close that takes a second more is stuck, and a thread in an
         * uninterruptible wait would keep the process from ending. */
        for (unsigned i = 0; i < 100 && fd_closer_pending(c) > 0; i++) {
                if (i == 10)
                        check_stuck(c, true);
                (void) usleep(100 * 1000);
        }
        sd_event_source_disable_unref(c->watch);
        c->watch = NULL;
        pthread_mutex_lock(&c->lock);
        for (unsigned i = 0; i < c->n_workers; i++)
                if (c->workers[i]->busy)
                        stuck = true;
        pthread_mutex_unlock(&c->lock);
        if (stuck) {
                /* Its threads still use it: left to the process's end. */
                log_error("Descriptors users passed are still being closed: corrald exits without them.");
                return NULL;
        }
        for (unsigned i = 0; i < c->n_workers; i++) {
                pthread_join(c->workers[i]->thread, NULL);
                free(c->workers[i]);
        }
        safe_close(c->fusectl_fd);
        free(c->queue);
        pthread_mutex_destroy(&c->lock);
        pthread_cond_destroy(&c->cond);
        free(c);
        return NULL;
}

void fd_closer_close(FdCloser *c, int fd, uid_t uid) {
        if (fd < 0)
                return;
        if (!c) {
                close_now(fd);
                return;
        }
        pthread_mutex_lock(&c->lock);
        if (!GREEDY_REALLOC(c->queue, c->allocated, c->n + 1)) {
                pthread_mutex_unlock(&c->lock);
                close_now(fd);
                return;
        }
        c->queue[c->n++] = (Pending) { .fd = fd, .uid = uid };
        pthread_cond_signal(&c->cond);
        pthread_mutex_unlock(&c->lock);
        if (c->watch && sd_event_source_get_enabled(c->watch, NULL) == 0)
                arm_watch(c);
}

unsigned fd_closer_pending(FdCloser *c) {
        unsigned n;

        if (!c)
                return 0;
        pthread_mutex_lock(&c->lock);
        n = (unsigned) (c->n - c->head);
        for (unsigned i = 0; i < c->n_workers; i++)
                if (c->workers[i]->busy)
                        n++;
        pthread_mutex_unlock(&c->lock);
        return n;
}
