// SPDX-License-Identifier: MIT
/*
 * A sample EFI application for the firmware phase's tests (fw.image=): a
 * user's own image, built with GNU-EFI, traced and decoded with its symbols
 * (build/efi/hello.so). Its load options choose what it does:
 *
 *   hello.efi [N] [quiet]  print a line through the console (not with
 *                   quiet), work out fib(N) (20) by recursion and sort a
 *                   table, return EFI_SUCCESS
 *   hello.efi fail  return EFI_ABORTED
 *   hello.efi spin  never return (fw.timeout= ends its trace)
 *   hello.efi tpl   never return, almost always at TPL_NOTIFY: a timer
 *                   event's notify (fw.timeout=) is dispatched in the
 *                   image's RestoreTPL call, in its traced code, not in
 *                   the timer's interrupt
 *   hello.efi load  load itself again from the boot volume (LoadImage, as a
 *                   shell would) with "9 quiet" and run it (StartImage)
 *   hello.efi reload  the same, then hello2.efi (this source built with
 *                   HELLO_SHIFT: its code at other offsets, and it returns
 *                   HELLO2_STATUS) the same way: the firmware loads it where
 *                   the first child was unloaded from. EFI_INCOMPATIBLE_VERSION
 *                   when the second child returned as the first would
 *   hello.efi ebs   call ExitBootServices, then power QEMU off through
 *                   isa-debug-exit with the success code (the trace ends at
 *                   the call and is written before it goes on)
 */
#include <efi.h>

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *st);

static EFI_SYSTEM_TABLE *ST;
/* what hello2.efi returns (a warning: not an error to the firmware) */
#define HELLO2_STATUS	EFI_WARN_BUFFER_TOO_SMALL

#ifdef HELLO_SHIFT
/* hello2.efi: everything after this at other offsets than in hello.efi */
static __attribute__((noipa)) unsigned long shift_pad(unsigned long v)
{
	for (unsigned int i = 0; i < 40; i++)
		v = v * 6364136223846793005ul + 1442695040888963407ul + (v >> 29);
	return v;
}
#endif

/* noipa: each a function of its own in the trace, under its own name */
static __attribute__((noipa)) unsigned long fib(unsigned int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static __attribute__((noipa)) void sort_table(unsigned int *v, unsigned int n)
{
	for (unsigned int i = 1; i < n; i++) {
		unsigned int x = v[i], j = i;

		while (j && v[j - 1] > x) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = x;
	}
}

static void say(const CHAR16 *s)
{
	ST->ConOut->OutputString(ST->ConOut, (CHAR16 *)s);
}

static int word_is(const CHAR16 *w, const char *s)
{
	while (*s && *w == (CHAR16)*s) {
		w++;
		s++;
	}
	return !*s && (*w == 0 || *w == ' ');
}

/*
 * Its own file (@file NULL) or @file beside it, loaded and run: the device's
 * path, then the file's path.
 */
static EFI_STATUS load_again(EFI_HANDLE image, EFI_LOADED_IMAGE *li, const CHAR16 *file)
{
	static unsigned char path[1024];
	static CHAR16 options[] = L"hello.efi 9 quiet";
	EFI_GUID dp_guid = DEVICE_PATH_PROTOCOL, li_guid = LOADED_IMAGE_PROTOCOL;
	EFI_DEVICE_PATH *dev, *p;
	EFI_LOADED_IMAGE *child;
	EFI_HANDLE h;
	UINTN n = 0, len;
	EFI_STATUS s;

	if (ST->BootServices->HandleProtocol(li->DeviceHandle, &dp_guid, (void **)&dev) != EFI_SUCCESS)
		return EFI_NOT_FOUND;
	for (p = dev; p->Type != 0x7f; p = (EFI_DEVICE_PATH *)((UINT8 *)p + len)) {
		len = p->Length[0] | p->Length[1] << 8;
		if (n + len > sizeof(path) - 4)
			return EFI_BUFFER_TOO_SMALL;
		for (UINTN i = 0; i < len; i++)
			path[n + i] = ((UINT8 *)p)[i];
		n += len;
	}
	for (p = li->FilePath; !file; p = (EFI_DEVICE_PATH *)((UINT8 *)p + len)) {
		len = p->Length[0] | p->Length[1] << 8;
		if (n + len > sizeof(path))
			return EFI_BUFFER_TOO_SMALL;
		for (UINTN i = 0; i < len; i++)
			path[n + i] = ((UINT8 *)p)[i];
		n += len;
		if (p->Type == 0x7f && p->SubType == 0xff)
			break;
	}
	if (file) {
		/* a media file path node (type 4, subtype 4), then the end node */
		UINTN chars = 0;

		while (file[chars++])
			;
		len = 4 + chars * 2;
		if (n + len + 4 > sizeof(path))
			return EFI_BUFFER_TOO_SMALL;
		path[n] = 4;
		path[n + 1] = 4;
		path[n + 2] = (unsigned char)len;
		path[n + 3] = (unsigned char)(len >> 8);
		for (UINTN i = 0; i < chars; i++) {
			path[n + 4 + 2 * i] = (unsigned char)file[i];
			path[n + 5 + 2 * i] = (unsigned char)(file[i] >> 8);
		}
		n += len;
		path[n] = 0x7f;
		path[n + 1] = 0xff;
		path[n + 2] = 4;
		path[n + 3] = 0;
	}
	s = ST->BootServices->LoadImage(FALSE, image, (EFI_DEVICE_PATH *)path, NULL, 0, &h);
	if (s != EFI_SUCCESS)
		return s;
	if (ST->BootServices->HandleProtocol(h, &li_guid, (void **)&child) == EFI_SUCCESS) {
		child->LoadOptions = options;
		child->LoadOptionsSize = sizeof(options);
	}
	return ST->BootServices->StartImage(h, NULL, NULL);
}

static __attribute__((noreturn)) void ebs_and_exit(EFI_HANDLE image)
{
	static unsigned char map[64 * 1024];
	UINTN size, key, dsize;
	UINT32 dver;

	for (int tries = 0; tries < 8; tries++) {
		size = sizeof(map);
		if (ST->BootServices->GetMemoryMap(&size, (EFI_MEMORY_DESCRIPTOR *)map, &key, &dsize,
						   &dver) != EFI_SUCCESS)
			break;
		if (ST->BootServices->ExitBootServices(image, key) == EFI_SUCCESS) {
			/* isa-debug-exit: 0x10 becomes QEMU's exit status 33 */
			__asm__ volatile("outl %0, %w1" :: "a"(0x10), "Nd"(0xf4));
			break;
		}
	}
	for (;;)
		__asm__ volatile("cli; hlt");
}

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *st)
{
	EFI_GUID li_guid = LOADED_IMAGE_PROTOCOL;
	EFI_LOADED_IMAGE *li = NULL;
	const CHAR16 *arg = L"";
	unsigned int table[64], n = 20;

	ST = st;
	if (st->BootServices->HandleProtocol(image, &li_guid, (void **)&li) == EFI_SUCCESS &&
	    li->LoadOptions && li->LoadOptionsSize >= 2) {
		/* "hello.efi ARG": the word after the program's name */
		const CHAR16 *o = li->LoadOptions;

		while (*o && *o != ' ')
			o++;
		while (*o == ' ')
			o++;
		arg = o;
	}
	if (word_is(arg, "fail"))
		return EFI_ABORTED;
	if (word_is(arg, "spin"))
		for (;;)
			__asm__ volatile("pause");
	if (word_is(arg, "tpl"))
		for (;;) {
			EFI_TPL old = st->BootServices->RaiseTPL(TPL_NOTIFY);

			for (volatile unsigned int i = 0; i < 20000; i++)
				;
			st->BootServices->RestoreTPL(old);
		}
	if (word_is(arg, "ebs"))
		ebs_and_exit(image);
	if (word_is(arg, "load"))
		return load_again(image, li, NULL);
	if (word_is(arg, "reload")) {
		EFI_STATUS s = load_again(image, li, NULL);

		if (s != EFI_SUCCESS)
			return s;
		s = load_again(image, li, L"\\EFI\\tools\\hello2.efi");
		return s == HELLO2_STATUS ? EFI_SUCCESS : s == EFI_SUCCESS ? EFI_INCOMPATIBLE_VERSION : s;
	}
	if (*arg >= '0' && *arg <= '9')
		for (n = 0; *arg >= '0' && *arg <= '9'; arg++)
			n = n * 10 + (unsigned int)(*arg - '0');
	while (*arg == ' ')
		arg++;
	if (!word_is(arg, "quiet"))	/* the console's drivers are a lot of code */
		say(L"hello: a user's EFI image, traced by topaz\r\n");
	for (unsigned int i = 0; i < 64; i++)
		table[i] = (i * 2654435761u) >> 7;
	sort_table(table, 64);
#ifdef HELLO_SHIFT
	/* hello2.efi says it is itself: old code run in its place would not */
	return fib(n) && table[0] <= table[63] && shift_pad(n) ? HELLO2_STATUS : EFI_LOAD_ERROR;
#else
	return fib(n) && table[0] <= table[63] ? EFI_SUCCESS : EFI_LOAD_ERROR;
#endif
}
