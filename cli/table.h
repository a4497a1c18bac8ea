/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Column tables for human output, squeue style: a header line, columns as wide as their
 * widest cell (up to a per-column maximum, past which cells are cut and end in an
 * ellipsis), two spaces between columns, no trailing blanks. Widths are computed over all
 * rows, so a table printed in slices (the queue's sections) stays aligned throughout. */

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "macro.h"

typedef struct Table Table;

/* headers: NULL-terminated, one per column. */
Table *table_new(const char *const *headers);
Table *table_free(Table *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(Table *, table_free);
#define _cleanup_table_ _cleanup_(table_freep)

/* Copies n_columns cells, escaped (text_escape()); NULL and "" cells show as "-". 0 or
 * -ENOMEM. */
int table_add_row(Table *t, const char *const *cells);
size_t table_get_rows(const Table *t) _pure_;
size_t table_get_columns(const Table *t) _pure_;

void table_set_align_right(Table *t, size_t column, bool right);
/* 0: unlimited (the default). At least 2 so a cut cell keeps one character. */
void table_set_max_width(Table *t, size_t column, size_t width);
/* What ends a cut cell; one column wide. Default "~"; "…" on UTF-8 terminals. */
void table_set_ellipsis(Table *t, const char *ellipsis);

/* The width column takes: its widest cell or header, capped by the maximum. */
size_t table_column_width(const Table *t, size_t column) _pure_;

/* Prints rows [from, to) (to clamped to the row count), after the header when header is
 * true. 0 or -EIO. */
int table_print(const Table *t, FILE *f, bool header, size_t from, size_t to);

/* Display width of UTF-8 text: one column per character (wide characters are rare in
 * job and user names, and we do not pull in wcwidth tables for them). */
size_t utf8_display_width(const char *s) _pure_;
