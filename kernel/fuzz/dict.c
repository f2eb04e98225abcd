// SPDX-License-Identifier: MIT
/*
 * fw.fuzz.dict=: a dictionary in AFL's format (docs/fuzzing.md), whose
 * tokens the mutator inserts and writes over an input's bytes. A line is
 * blank, a comment (#...), or [name[@level]=]"value"; the value holds
 * printable characters, \\, \" and \xNN. A bad line is named, file:line.
 */
#include <topaz/fuzz.h>
#include <topaz/errno.h>
#include <topaz/printk.h>
#include <topaz/slab.h>
#include <topaz/string.h>

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * One line @s[0..@n) (no newline): its token into *@e, or *@e untouched for a
 * blank or comment line. Return: 1 a token, 0 none, or -EINVAL with @why set.
 */
static int parse_line(const char *s, size_t n, struct fuzz_dict_entry *e, const char **why)
{
	size_t i = 0;
	u32 len = 0;

	while (i < n && is_space(s[i]))
		i++;
	while (n > i && is_space(s[n - 1]))
		n--;
	if (i == n || s[i] == '#')
		return 0;
	if (s[i] != '"') {
		/* a name: letters, digits, _ and an @level */
		while (i < n && (s[i] == '_' || s[i] == '@' || (s[i] >= '0' && s[i] <= '9') ||
				 ((s[i] | 0x20) >= 'a' && (s[i] | 0x20) <= 'z')))
			i++;
		while (i < n && is_space(s[i]))
			i++;
		if (i == n || s[i] != '=') {
			*why = "not name=\"value\", \"value\" or a # comment";
			return -EINVAL;
		}
		i++;
		while (i < n && is_space(s[i]))
			i++;
		if (i == n || s[i] != '"') {
			*why = "the value does not start with a double quote";
			return -EINVAL;
		}
	}
	i++;	/* the opening quote */
	if (n <= i || s[n - 1] != '"') {
		*why = "the value does not end with a double quote";
		return -EINVAL;
	}
	n--;	/* the closing quote */
	for (; i < n; i++) {
		u8 c = (u8)s[i];

		if (c < 0x20 || c >= 0x7f) {
			*why = "a byte that is not printable: write it \\xNN";
			return -EINVAL;
		}
		if (c == '"') {
			*why = "a double quote inside the value: write it \\\"";
			return -EINVAL;
		}
		if (c == '\\') {
			if (i + 1 < n && (s[i + 1] == '\\' || s[i + 1] == '"')) {
				c = (u8)s[++i];
			} else if (i + 3 < n && s[i + 1] == 'x' && hexval(s[i + 2]) >= 0 &&
				   hexval(s[i + 3]) >= 0) {
				c = (u8)(hexval(s[i + 2]) << 4 | hexval(s[i + 3]));
				i += 3;
			} else {
				*why = "a backslash not followed by \\, \" or xNN (two hex digits)";
				return -EINVAL;
			}
		}
		if (len == FUZZ_DICT_TOKEN_MAX) {
			*why = "the value is longer than 128 bytes";
			return -EINVAL;
		}
		e->data[len++] = c;
	}
	if (!len) {
		*why = "an empty value";
		return -EINVAL;
	}
	e->len = len;
	return 1;
}

int fuzz_dict_parse(struct fuzz_dict *d, const char *text, size_t size, const char *file,
		    char *err, size_t err_size)
{
	u32 lines = 1, line = 0;
	size_t at = 0;

	memset(d, 0, sizeof(*d));
	for (size_t i = 0; i < size; i++)
		lines += text[i] == '\n';
	if (lines > FUZZ_DICT_MAX) {
		ksnprintf(err, err_size, "%s: %u lines: at most %u tokens are read", file, lines,
			  FUZZ_DICT_MAX);
		return -E2BIG;
	}
	d->e = kmalloc(lines * sizeof(*d->e), GFP_KERNEL);
	if (!d->e) {
		ksnprintf(err, err_size, "%s: no memory for %u tokens", file, lines);
		return -ENOMEM;
	}
	while (at < size) {
		const char *s = text + at;
		size_t n = 0, nul = 0;
		const char *why = NULL;
		int r;

		while (at + n < size && s[n] != '\n')
			nul += !s[n++];
		line++;
		at += n + 1;
		if (nul) {
			ksnprintf(err, err_size, "%s:%u: a NUL byte (not a text file?)", file, line);
			fuzz_dict_free(d);
			return -EINVAL;
		}
		r = parse_line(s, n, &d->e[d->n], &why);
		if (r < 0) {
			ksnprintf(err, err_size, "%s:%u: %s", file, line, why);
			fuzz_dict_free(d);
			return r;
		}
		d->n += (u32)r;
	}
	if (!d->n) {
		ksnprintf(err, err_size, "%s: no token in it", file);
		fuzz_dict_free(d);
		return -ENODATA;
	}
	return 0;
}

void fuzz_dict_free(struct fuzz_dict *d)
{
	kfree(d->e);
	d->e = NULL;
	d->n = 0;
}
