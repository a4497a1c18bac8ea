/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "strv.h"
#include "table.h"
#include "text-util.h"

typedef struct TableColumn {
        char *header;
        size_t max_width;
        bool align_right;
} TableColumn;

struct Table {
        TableColumn *columns;
        size_t n_columns;
        char **cells;           /* n_rows x n_columns, row-major */
        size_t n_rows, n_allocated;
        char *ellipsis;
};

Table *table_new(const char *const *headers) {
        _cleanup_table_ Table *t = NULL;
        size_t n = 0;

        while (headers && headers[n])
                n++;
        if (n == 0)
                return NULL;
        t = new0(Table, 1);
        if (!t)
                return NULL;
        t->columns = new0(TableColumn, n);
        t->ellipsis = strdup("~");
        if (!t->columns || !t->ellipsis)
                return NULL;
        t->n_columns = n;
        for (size_t i = 0; i < n; i++)
                if (!(t->columns[i].header = strdup(headers[i])))
                        return NULL;
        return TAKE_PTR(t);
}

Table *table_free(Table *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; t->columns && i < t->n_columns; i++)
                free(t->columns[i].header);
        for (size_t i = 0; i < t->n_rows * t->n_columns; i++)
                free(t->cells[i]);
        free(t->cells);
        free(t->columns);
        free(t->ellipsis);
        return mfree(t);
}

int table_add_row(Table *t, const char *const *cells) {
        size_t base;

        assert(t);
        assert(cells);

        if (!GREEDY_REALLOC(t->cells, t->n_allocated, (t->n_rows + 1) * t->n_columns))
                return -ENOMEM;
        base = t->n_rows * t->n_columns;
        for (size_t i = 0; i < t->n_columns; i++) {
                /* Escaped here, so widths count what is printed and no cell reaches the
                 * terminal as a command, whatever corrald stored or relayed. */
                t->cells[base + i] = text_escape(isempty(cells[i]) ? "-" : cells[i]);
                if (!t->cells[base + i]) {
                        while (i > 0)
                                free(t->cells[base + --i]);
                        return -ENOMEM;
                }
        }
        t->n_rows++;
        return 0;
}

size_t table_get_rows(const Table *t) {
        return t ? t->n_rows : 0;
}

size_t table_get_columns(const Table *t) {
        return t ? t->n_columns : 0;
}

void table_set_align_right(Table *t, size_t column, bool right) {
        if (t && column < t->n_columns)
                t->columns[column].align_right = right;
}

void table_set_max_width(Table *t, size_t column, size_t width) {
        if (t && column < t->n_columns)
                t->columns[column].max_width = width == 0 ? 0 : MAX(width, (size_t) 2);
}

void table_set_ellipsis(Table *t, const char *ellipsis) {
        char *e;

        if (!t || !ellipsis || !(e = strdup(ellipsis)))
                return;
        free(t->ellipsis);
        t->ellipsis = e;
}

size_t utf8_display_width(const char *s) {
        size_t w = 0;

        for (const unsigned char *p = (const unsigned char *) s; p && *p; p++)
                if ((*p & 0xC0) != 0x80)
                        w++;
        return w;
}

size_t table_column_width(const Table *t, size_t column) {
        size_t w;

        if (!t || column >= t->n_columns)
                return 0;
        w = utf8_display_width(t->columns[column].header);
        for (size_t r = 0; r < t->n_rows; r++)
                w = MAX(w, utf8_display_width(t->cells[r * t->n_columns + column]));
        if (t->columns[column].max_width > 0)
                w = MIN(w, t->columns[column].max_width);
        return w;
}

/* The byte length of the first n characters of s. */
static size_t utf8_prefix_bytes(const char *s, size_t n) {
        const unsigned char *p = (const unsigned char *) s;
        size_t chars = 0;

        for (; *p; p++) {
                if ((*p & 0xC0) != 0x80) {
                        if (chars == n)
                                break;
                        chars++;
                }
        }
        return (size_t) ((const char *) p - s);
}

static void print_cell(const Table *t, FILE *f, const char *s, size_t width, bool right, bool last) {
        size_t w = utf8_display_width(s), pad;

        if (w > width) {
                fprintf(f, "%.*s%s", (int) utf8_prefix_bytes(s, width - 1), s, t->ellipsis);
                return;
        }
        pad = width - w;
        if (right)
                fprintf(f, "%*s%s", (int) pad, "", s);
        else if (last)
                fputs(s, f);
        else
                fprintf(f, "%s%*s", s, (int) pad, "");
}

static void print_line(const Table *t, FILE *f, char *const *cells, const size_t *widths) {
        for (size_t c = 0; c < t->n_columns; c++) {
                if (c > 0)
                        fputs("  ", f);
                print_cell(t, f, cells[c], widths[c], t->columns[c].align_right, c + 1 == t->n_columns);
        }
        fputc('\n', f);
}

int table_print(const Table *t, FILE *f, bool header, size_t from, size_t to) {
        _cleanup_free_ size_t *widths = NULL;
        _cleanup_free_ char **headers = NULL;

        assert(t);
        assert(f);

        widths = new(size_t, t->n_columns);
        headers = new(char *, t->n_columns);
        if (!widths || !headers)
                return -ENOMEM;
        for (size_t c = 0; c < t->n_columns; c++) {
                widths[c] = table_column_width(t, c);
                headers[c] = t->columns[c].header;
        }
        if (header)
                print_line(t, f, headers, widths);
        to = MIN(to, t->n_rows);
        for (size_t r = from; r < to; r++)
                print_line(t, f, t->cells + r * t->n_columns, widths);
        return ferror(f) ? -EIO : 0;
}
