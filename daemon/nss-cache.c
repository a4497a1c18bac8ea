/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "intern.h"
#include "nss-cache.h"

const NssOps nss_ops_libc = {
        .getpwuid = getpwuid,
        .getgrgid = getgrgid,
        .getgrnam = getgrnam,
        .getgrouplist = getgrouplist,
};

/* One answer: a user or a group copied into one block (value NULL: there was none). Keyed
 * by a uid or gid (num), or by a group's name. */
typedef struct Entry {
        uint64_t num;
        char *name;
        uint64_t expires;
        void *value;
} Entry;

/* Open addressing, twice as many slots as entries at most. */
#define SLOTS (2 * NSS_CACHE_ENTRIES_MAX)

typedef struct Table {
        Entry *slots; /* SLOTS of them, allocated at the first insertion */
        unsigned n;
} Table;

struct NssCache {
        const NssOps *ops;
        Table users, groups_by_gid, groups_by_name, group_lists;
        /* The name and primary group the group list being fetched is for. */
        const char *list_user;
        gid_t list_group;
};

/* A user's groups as getgrouplist(3) gave them for that name and primary group. */
typedef struct GroupList {
        char *user;
        gid_t group;
        size_t n;
        gid_t groups[];
} GroupList;

static uint64_t hash_num(uint64_t x) {
        x ^= x >> 33;
        x *= UINT64_C(0xff51afd7ed558ccd);
        return x ^ (x >> 33);
}

static void table_clear(Table *t) {
        if (!t->slots)
                return;
        for (unsigned i = 0; i < SLOTS; i++) {
                free(t->slots[i].name);
                free(t->slots[i].value);
        }
        memset(t->slots, 0, SLOTS * sizeof *t->slots);
        t->n = 0;
}

/* The slot of the key: its entry, or the empty slot where it would go. NULL on ENOMEM. */
static Entry *table_slot(Table *t, uint64_t num, const char *name) {
        uint64_t h = name ? string_hash(name) : hash_num(num);

        if (!t->slots) {
                t->slots = calloc(SLOTS, sizeof *t->slots);
                if (!t->slots)
                        return NULL;
        }
        for (unsigned i = (unsigned) (h % SLOTS);; i = (i + 1) % SLOTS) {
                Entry *e = &t->slots[i];
                if (!e->expires || (name ? streq(e->name, name) : e->num == num))
                        return e;
        }
}

static size_t strsize(const char *s) {
        return s ? strlen(s) + 1 : 0;
}

static char *put(char **p, const char *s) {
        char *r;

        if (!s)
                return NULL;
        r = memcpy(*p, s, strlen(s) + 1);
        *p += strlen(s) + 1;
        return r;
}

static struct passwd *passwd_copy(const struct passwd *pw) {
        size_t size = sizeof(struct passwd) + strsize(pw->pw_name) + strsize(pw->pw_passwd) + strsize(pw->pw_gecos) +
                      strsize(pw->pw_dir) + strsize(pw->pw_shell);
        struct passwd *c = malloc(size);
        char *p;

        if (!c)
                return NULL;
        *c = *pw;
        p = (char *) (c + 1);
        c->pw_name = put(&p, pw->pw_name);
        c->pw_passwd = put(&p, pw->pw_passwd);
        c->pw_gecos = put(&p, pw->pw_gecos);
        c->pw_dir = put(&p, pw->pw_dir);
        c->pw_shell = put(&p, pw->pw_shell);
        return c;
}

static struct group *group_copy(const struct group *gr) {
        size_t n_mem = 0, size = sizeof(struct group) + strsize(gr->gr_name) + strsize(gr->gr_passwd);
        struct group *c;
        char *p;

        for (char **m = gr->gr_mem; m && *m; m++, n_mem++)
                size += strlen(*m) + 1;
        size += (n_mem + 1) * sizeof(char *);
        c = malloc(size);
        if (!c)
                return NULL;
        *c = *gr;
        c->gr_mem = (char **) (c + 1);
        p = (char *) (c->gr_mem + n_mem + 1);
        c->gr_name = put(&p, gr->gr_name);
        c->gr_passwd = put(&p, gr->gr_passwd);
        for (size_t i = 0; i < n_mem; i++)
                c->gr_mem[i] = put(&p, gr->gr_mem[i]);
        c->gr_mem[n_mem] = NULL;
        return c;
}

/* The answer, from a fresh entry or from fetch(), which asks NSS and copies: NULL with
 * errno 0 when there is none (remembered, for less long), else errno says what failed
 * (not remembered: LDAP may answer next time). */
typedef void *(*FetchFunc)(NssCache *c, uint64_t num, const char *name);

static void *lookup(NssCache *c, Table *t, uint64_t num, const char *name, uint64_t now, FetchFunc fetch) {
        Entry *e = table_slot(t, num, name);
        void *v;

        if (!e) {
                errno = ENOMEM;
                return NULL;
        }
        if (e->expires && e->expires > now) {
                if (!e->value)
                        errno = ENOENT;
                return e->value;
        }
        errno = 0;
        v = fetch(c, num, name);
        if (!v && errno != 0)
                return NULL;
        if (!e->expires) {
                char *key = NULL;

                if (name && !(key = strdup(name))) {
                        free(v);
                        errno = ENOMEM;
                        return NULL;
                }
                if (t->n >= NSS_CACHE_ENTRIES_MAX) {
                        table_clear(t);
                        e = table_slot(t, num, name);
                }
                e->name = key;
                e->num = num;
                t->n++;
        }
        free(e->value);
        e->value = v;
        e->expires = now + (v ? NSS_CACHE_TTL_USEC : NSS_CACHE_NEGATIVE_TTL_USEC);
        if (!v)
                errno = ENOENT;
        return v;
}

/* getpwuid(3): NULL with errno 0, ENOENT, ESRCH, EBADF or EPERM is "none" (errno 0
 * here); any other errno a failure. A copy that failed is ENOMEM. */
static void *fetched(void *copy, bool found) {
        if (found) {
                if (!copy)
                        errno = ENOMEM;
        } else if (errno == 0 || errno == ENOENT || errno == ESRCH || errno == EBADF || errno == EPERM)
                errno = 0;
        return copy;
}

static void *fetch_user(NssCache *c, uint64_t num, const char *name) {
        struct passwd *pw;

        errno = 0;
        pw = c->ops->getpwuid((uid_t) num);
        return fetched(pw ? passwd_copy(pw) : NULL, pw);
}

static void *fetch_group_gid(NssCache *c, uint64_t num, const char *name) {
        struct group *gr;

        errno = 0;
        gr = c->ops->getgrgid((gid_t) num);
        return fetched(gr ? group_copy(gr) : NULL, gr);
}

static void *fetch_group_name(NssCache *c, uint64_t num, const char *name) {
        struct group *gr;

        errno = 0;
        gr = c->ops->getgrnam(name);
        return fetched(gr ? group_copy(gr) : NULL, gr);
}

static void *fetch_group_list(NssCache *c, uint64_t num, const char *name) {
        GroupList *l;
        gid_t *groups = NULL;
        int n = 64;

        for (;;) {
                int k = n;
                gid_t *g = reallocarray(groups, (size_t) n, sizeof(gid_t));
                if (!g) {
                        free(groups);
                        errno = ENOMEM;
                        return NULL;
                }
                groups = g;
                if (c->ops->getgrouplist(c->list_user, c->list_group, groups, &k) >= 0) {
                        n = k;
                        break;
                }
                if (k <= n || k > 65536) { /* no bigger count to try: NSS failed */
                        free(groups);
                        errno = EIO;
                        return NULL;
                }
                n = k;
        }
        l = malloc(sizeof(GroupList) + (size_t) n * sizeof(gid_t) + strlen(c->list_user) + 1);
        if (!l) {
                free(groups);
                errno = ENOMEM;
                return NULL;
        }
        l->group = c->list_group;
        l->n = (size_t) n;
        memcpy(l->groups, groups, (size_t) n * sizeof(gid_t));
        l->user = strcpy((char *) (l->groups + n), c->list_user);
        free(groups);
        return l;
}

int nss_cache_getgrouplist(NssCache *c, const char *user, uid_t uid, gid_t group, uint64_t now, const gid_t **ret,
                           size_t *ret_n) {
        Table *t;
        Entry *e;
        GroupList *l;

        if (!c || !user)
                return -EINVAL;
        t = &c->group_lists;
        e = table_slot(t, uid, NULL);
        /* An entry for another name or primary group of that uid is stale. */
        if (e && e->expires && e->value &&
            (((GroupList *) e->value)->group != group || !streq(((GroupList *) e->value)->user, user)))
                e->expires = 1;
        c->list_user = user;
        c->list_group = group;
        l = lookup(c, t, uid, NULL, now, fetch_group_list);
        c->list_user = NULL;
        if (!l)
                return errno == ENOMEM ? -ENOMEM : -EIO;
        *ret = l->groups;
        *ret_n = l->n;
        return 0;
}

/* Without a cache: NSS's own storage, as before. */
const struct passwd *nss_cache_getpwuid(NssCache *c, uid_t uid, uint64_t now) {
        if (!c)
                return getpwuid(uid);
        return lookup(c, &c->users, uid, NULL, now, fetch_user);
}

const struct group *nss_cache_getgrgid(NssCache *c, gid_t gid, uint64_t now) {
        if (!c)
                return getgrgid(gid);
        return lookup(c, &c->groups_by_gid, gid, NULL, now, fetch_group_gid);
}

const struct group *nss_cache_getgrnam(NssCache *c, const char *name, uint64_t now) {
        if (!name) {
                errno = ENOENT;
                return NULL;
        }
        if (!c)
                return getgrnam(name);
        return lookup(c, &c->groups_by_name, 0, name, now, fetch_group_name);
}

void nss_cache_flush(NssCache *c) {
        if (!c)
                return;
        table_clear(&c->users);
        table_clear(&c->groups_by_gid);
        table_clear(&c->groups_by_name);
        table_clear(&c->group_lists);
}

NssCache *nss_cache_new(const NssOps *ops) {
        NssCache *c = calloc(1, sizeof *c);

        if (!c)
                return NULL;
        c->ops = ops;
        return c;
}

NssCache *nss_cache_free(NssCache *c) {
        if (!c)
                return NULL;
        nss_cache_flush(c);
        free(c->users.slots);
        free(c->groups_by_gid.slots);
        free(c->groups_by_name.slots);
        free(c->group_lists.slots);
        free(c);
        return NULL;
}
