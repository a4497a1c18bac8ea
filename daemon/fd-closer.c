/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-closer.h"
#include "errno-util.h"
#include "fd-util.h"
#include "log.h"
#include "macro.h"

#define FUSECTL_PATH "/sys/fs/fuse/connections"

typedef struct Pending {
        int fd;
        uid_t uid;
} Pending;

struct FdCloser {
        sd_event *event;
        sd_event_source *watch; /* while descriptors wait: is a close stuck? */
        int fusectl_fd;
        pthread_t thread;
        bool started;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        /* Under lock: the queue, [head, n) still to close; the close under way. */
        Pending *queue;
        size_t head, n, allocated;
        bool busy, stop;
        uid_t busy_uid;
        uint64_t busy_since, busy_seq, aborted_seq;
};

static void *closer_thread(void *userdata) {
        FdCloser *c = userdata;

        pthread_mutex_lock(&c->lock);
        for (;;) {
                Pending p;

                while (c->head == c->n && !c->stop)
                        pthread_cond_wait(&c->cond, &c->lock);
                if (c->head == c->n)
                        break;
                p = c->queue[c->head++];
                if (c->head == c->n)
                        c->head = c->n = 0;
                c->busy = true;
                c->busy_uid = p.uid;
                c->busy_since = now_usec(CLOCK_MONOTONIC);
                c->busy_seq++;
                pthread_mutex_unlock(&c->lock);
                safe_close(p.fd);
                pthread_mutex_lock(&c->lock);
                c->busy = false;
        }
        pthread_mutex_unlock(&c->lock);
        return NULL;
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

static void arm_watch(FdCloser *c) {
        if (!c->watch)
                return;
        (void) sd_event_source_set_time_relative(c->watch, USEC_PER_SEC);
        (void) sd_event_source_set_enabled(c->watch, SD_EVENT_ONESHOT);
}

/* On the loop: a close waiting too long is its passer's FUSE server's doing. */
static void check_stuck(FdCloser *c, bool now) {
        _cleanup_close_ int fusectl = -EBADF;
        bool stuck;
        uid_t uid;
        uint64_t seq;
        int r;

        pthread_mutex_lock(&c->lock);
        stuck = c->busy && c->aborted_seq != c->busy_seq &&
                (now || now_usec(CLOCK_MONOTONIC) - c->busy_since >= FD_CLOSER_STUCK_USEC);
        uid = c->busy_uid;
        seq = c->busy_seq;
        pthread_mutex_unlock(&c->lock);
        if (!stuck)
                return;
        fusectl = fusectl_dir(c);
        r = fuse_abort_user_connections(fusectl, uid);
        if (r > 0)
                log_warning("Closing a descriptor uid %u passed has waited %s on a FUSE file system's server: "
                            "aborted %d FUSE connection(s) of that user.", (unsigned) uid,
                            now ? "at shutdown" : "5 s", r);
        else
                log_warning("Closing a descriptor uid %u passed is stuck, and no FUSE connection of that "
                            "user with requests waiting could be aborted (%s).", (unsigned) uid,
                            r < 0 ? strerror(-r) : "none found");
        pthread_mutex_lock(&c->lock);
        c->aborted_seq = seq;
        pthread_mutex_unlock(&c->lock);
}

static int on_watch(sd_event_source *s, uint64_t usec, void *userdata) {
        FdCloser *c = userdata;
        bool idle;

        check_stuck(c, false);
        pthread_mutex_lock(&c->lock);
        idle = !c->busy && c->head == c->n;
        pthread_mutex_unlock(&c->lock);
        if (!idle)
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
                c->event = sd_event_ref(event);
        }
        r = -pthread_create(&c->thread, NULL, closer_thread, c);
        if (r < 0) {
                sd_event_source_disable_unref(c->watch);
                sd_event_unref(c->event);
                safe_close(c->fusectl_fd);
                return r;
        }
        c->started = true;
        *ret = TAKE_PTR(c);
        return 0;
}

FdCloser *fd_closer_free(FdCloser *c) {
        if (!c)
                return NULL;
        pthread_mutex_lock(&c->lock);
        c->stop = true;
        pthread_cond_signal(&c->cond);
        pthread_mutex_unlock(&c->lock);
        /* A close that takes a second more is stuck: corrald is going, and a thread in an
         * uninterruptible wait would keep the process from ending. */
        for (unsigned i = 0; i < 100 && fd_closer_pending(c) > 0; i++) {
                if (i >= 10)
                        check_stuck(c, true);
                (void) usleep(100 * 1000);
        }
        if (c->started)
                pthread_join(c->thread, NULL);
        sd_event_source_disable_unref(c->watch);
        sd_event_unref(c->event);
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
                safe_close(fd);
                return;
        }
        pthread_mutex_lock(&c->lock);
        if (!GREEDY_REALLOC(c->queue, c->allocated, c->n + 1)) {
                pthread_mutex_unlock(&c->lock);
                safe_close(fd);
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
        n = (unsigned) (c->n - c->head) + (c->busy ? 1U : 0U);
        pthread_mutex_unlock(&c->lock);
        return n;
}
