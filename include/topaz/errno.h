/* SPDX-License-Identifier: MIT */
/* Linux's errno values; identical to glibc's on Linux, so both builds agree. */
#ifndef TOPAZ_ERRNO_H
#define TOPAZ_ERRNO_H
#ifndef EPERM
#define EPERM		1
#define ENOENT		2
#define EIO		5
#define E2BIG		7
#define ENOEXEC		8
#define ENOMEM		12
#define EFAULT		14
#define EBUSY		16
#define EEXIST		17
#define ENODEV		19
#define EINVAL		22
#define ENOSPC		28
#define ERANGE		34
#define ENODATA		61
#define EOPNOTSUPP	95
#define ETIMEDOUT	110
#define EALREADY	114
#endif
#endif
