/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "fd-util.h"
#include "log.h"
#include "worker.h"

typedef struct WorkItem {
        work_run_t run;
        work_done_t done;
        void *data;
        int r;
        struct WorkItem *next;
} WorkItem;

/* Two lists under one mutex: todo (FIFO, taken by the threads) and finished (handed to
 * the loop through the eventfd). Everything else belongs to the loop's thread. */
struct WorkerPool {
        pthread_mutex_t lock;
        pthread_cond_t wake;
        WorkItem *todo_head, **todo_tail;
        WorkItem *finished;
        bool stopping;

        pthread_t *threads;
        unsigned n_threads, max_threads;
        unsigned pending;

        int efd;
        sd_event_source *source;
};

static void *thread_main(void *userdata) {
        WorkerPool *p = userdata;
        uint64_t one = 1;

        pthread_mutex_lock(&p->lock);
        for (;;) {
                WorkItem *w;

                while (!p->todo_head && !p->stopping)
                        pthread_cond_wait(&p->wake, &p->lock);
                if (!p->todo_head)
                        break;
                w = p->todo_head;
                p->todo_head = w->next;
                if (!p->todo_head)
                        p->todo_tail = &p->todo_head;
                pthread_mutex_unlock(&p->lock);

                w->r = w->run(w->data);

                pthread_mutex_lock(&p->lock);
                w->next = p->finished;
                p->finished = w;
                /* Cannot fail short of a counter at 2^64 - 2: nothing to do about it here. */
                (void) !write(p->efd, &one, sizeof one);
        }
        pthread_mutex_unlock(&p->lock);
        return NULL;
}

/* The finished items, oldest first, off the shared list. */
static WorkItem *take_finished(WorkerPool *p) {
        WorkItem *l, *rev = NULL;

        pthread_mutex_lock(&p->lock);
        l = p->finished;
        p->finished = NULL;
        pthread_mutex_unlock(&p->lock);
        while (l) {
                WorkItem *n = l->next;
                l->next = rev;
                rev = l;
                l = n;
        }
        return rev;
}

static void deliver(WorkerPool *p, WorkItem *l) {
        while (l) {
                WorkItem *n = l->next;
                p->pending--;
                l->done(l->data, l->r);
                free(l);
                l = n;
        }
}

static int on_finished(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        WorkerPool *p = userdata;
        uint64_t n;

        (void) !read(p->efd, &n, sizeof n);
        deliver(p, take_finished(p));
        return 0;
}

int worker_pool_new(sd_event *event, unsigned n_threads, WorkerPool **ret) {
        _cleanup_(worker_pool_freep) WorkerPool *p = NULL;
        int r;

        if (n_threads == 0)
                return -EINVAL;
        p = new0(WorkerPool, 1);
        if (!p)
                return -ENOMEM;
        p->efd = -EBADF;
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->wake, NULL);
        p->todo_tail = &p->todo_head;
        p->max_threads = n_threads;
        p->threads = new0(pthread_t, n_threads);
        if (!p->threads)
                return -ENOMEM;
        p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (p->efd < 0)
                return -errno;
        r = sd_event_add_io(event, &p->source, p->efd, EPOLLIN, on_finished, p);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

WorkerPool *worker_pool_free(WorkerPool *p) {
        WorkItem *todo;

        if (!p)
                return NULL;
        pthread_mutex_lock(&p->lock);
        p->stopping = true;
        todo = p->todo_head;
        p->todo_head = NULL;
        p->todo_tail = &p->todo_head;
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);
        for (unsigned i = 0; i < p->n_threads; i++)
                (void) pthread_join(p->threads[i], NULL);
        deliver(p, take_finished(p));
        for (WorkItem *w = todo; w; w = w->next)
                w->r = -ECANCELED;
        deliver(p, todo);

        sd_event_source_disable_unref(p->source);
        safe_close(p->efd);
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->lock);
        free(p->threads);
        free(p);
        return NULL;
}

int worker_pool_submit(WorkerPool *p, work_run_t run, work_done_t done, void *data) {
        WorkItem *w;
        int r;

        w = new(WorkItem, 1);
        if (!w)
                return -ENOMEM;
        *w = (WorkItem) { .run = run, .done = done, .data = data };

        pthread_mutex_lock(&p->lock);
        /* Another thread while there are fewer than the bound and more items than idle
         * threads could take. */
        if (p->n_threads < p->max_threads && p->pending >= p->n_threads) {
                r = -pthread_create(&p->threads[p->n_threads], NULL, thread_main, p);
                if (r < 0 && p->n_threads == 0) {
                        pthread_mutex_unlock(&p->lock);
                        free(w);
                        return r;
                }
                if (r >= 0)
                        p->n_threads++;
                else
                        log_debug_errno(r, "Cannot start another worker thread, going on with %u: %m", p->n_threads);
        }
        *p->todo_tail = w;
        p->todo_tail = &w->next;
        p->pending++;
        pthread_cond_signal(&p->wake);
        pthread_mutex_unlock(&p->lock);
        return 0;
}

unsigned worker_pool_pending(const WorkerPool *p) {
        return p->pending;
}
