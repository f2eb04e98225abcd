# topaz: a bare-metal x86_64 unikernel around an Intel PT driver.
# `make run` boots it in QEMU; `make test` runs the host and QEMU tests.

BUILD      ?= build
CC         ?= gcc
LD         := ld
OBJCOPY    := objcopy
NM         := nm
EFI_INC    := /usr/include/efi
EFI_LIB    := /usr/lib
CMDLINE_DEFAULT := pt=on pt.buf=32K pt.region=4K run=demo
CMDLINE    ?= $(CMDLINE_DEFAULT)
# through the environment: a command line may hold quotes (fw.image="\path args")
export CMDLINE
SMP        ?= 4
# make run: the seconds before QEMU is stopped (boot.sh --timeout); INSN=1:
# the listings too, build/trace/insn.txt and packets.txt (gigabytes)
TIMEOUT    ?= 120
INSN       ?= 0
V          ?= 0
Q          := $(if $(filter 1,$(V)),,@)

# ---------------------------------------------------------------- sources
# The subsystems of tracing (docs/architecture.md): the Intel PT driver, the
# software trace unit, the tracing session, the x86 decoder, the trace engine.
PT_DRIVER_SRCS := drivers/pt/pt.c drivers/pt/pt_topa.c drivers/pt/pt_aux.c drivers/pt/pt_options.c
PT_MODEL_SRCS := $(addprefix drivers/pt_model/,pt_packet_enc.c pt_model.c pt_model_rules.c \
	pt_model_topa.c pt_model_events.c pt_model_batch.c pt_model_profiles.c)
TRACING_SRCS := kernel/tracing/pt_session.c kernel/tracing/trace_writer.c kernel/tracing/pt_unit.c \
	kernel/tracing/trace_window.c kernel/tracing/mem_sink.c kernel/tracing/pt_session_options.c \
	kernel/tracing/pt_coverage.c kernel/tracing/window_trace.c
X86_SRCS := arch/x86/lib/insn.c
COVERAGE_SRCS := kernel/coverage/ptcov.c
FUZZ_SRCS := kernel/fuzz/mutate.c kernel/fuzz/corpus.c kernel/fuzz/sha1.c kernel/fuzz/dict.c \
	kernel/fuzz/guard_heap.c
ENGINE_PORTABLE_SRCS := $(addprefix kernel/trace_engine/,branch_emul.c branch_sites.c \
	trace_engine.c engine_step.c engine_dispatch.c engine_selfcheck.c engine_cache_mem.c \
	engine_sideband.c xlat.c)

# fw.image='s header check, without the firmware: fuzzed hosted (fuzz_fwimage)
FW_PORTABLE_SRCS := boot/firmware/pe_check.c

# Logic shared by the kernel and the hosted build (tests, benchmarks).
PORTABLE_SRCS := \
	kernel/cmdline.c lib/kstrto.c kernel/printk.c lib/vsprintf.c \
	kernel/symbols.c arch/x86/msr.c kernel/ktest.c kernel/shutdown.c arch/x86/acpi.c kernel/cpumask.c \
	mm/page_alloc.c mm/gfp.c \
	mm/slab.c mm/slab_debug.c mm/kmalloc.c kernel/probe.c kernel/probe_handlers.c \
	$(PT_DRIVER_SRCS) $(PT_MODEL_SRCS) $(TRACING_SRCS) $(X86_SRCS) $(COVERAGE_SRCS) \
	$(ENGINE_PORTABLE_SRCS) $(FW_PORTABLE_SRCS) $(FUZZ_SRCS)

# Freestanding only: boot, CPU, traps, devices, and the in-kernel tests.
KERNEL_SRCS := \
	boot/efi_main.c boot/handoff.S \
	kernel/main.c arch/x86/arch.c lib/string.c arch/x86/entry.S \
	arch/x86/gdt.c arch/x86/traps.c arch/x86/extable.c arch/x86/apic.c arch/x86/time.c \
	arch/x86/smp.c arch/x86/smp_trampoline.S kernel/trace_engine/xlat_rt.S \
	$(wildcard kernel/workloads/*.c) \
	$(filter-out $(FW_PORTABLE_SRCS),$(wildcard boot/firmware/*.c)) \
	kernel/ksyms.c arch/x86/paging.c arch/x86/cpu.c arch/x86/power.c kernel/console.c kernel/panic.c \
	kernel/crash.c drivers/serial/uart16550.c drivers/debugcon/debugcon.c drivers/pt/pt_irq.c \
	kernel/tracing/pt_boot.c kernel/tracing/pt_ptwrite.c \
	$(wildcard tests/kernel/*.c)

HOST_SUPPORT_SRCS := tests/host/hosted_machine.c
HOST_TESTS := $(patsubst tests/host/%.c,$(BUILD)/host/%,$(wildcard tests/host/test_*.c))

# ---------------------------------------------------------------- flags
WARN      := -Wall -Wextra -Werror -Wno-unused-parameter -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes
KCFLAGS   := -std=gnu11 -O2 -g $(WARN) -Iinclude -isystem $(EFI_INC) -isystem $(EFI_INC)/x86_64 \
	-ffreestanding -fpic -fshort-wchar -mno-red-zone -fno-stack-protector \
	-fno-stack-check -maccumulate-outgoing-args -DGNU_EFI_USE_MS_ABI \
	-mgeneral-regs-only -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
	-fvisibility=hidden -fno-strict-aliasing -fno-merge-all-constants \
	-fno-asynchronous-unwind-tables -mstringop-strategy=unrolled_loop -DTOPAZ_KERNEL \
	-DTOPAZ_VERSION=\"$(shell git describe --always --dirty 2>/dev/null || echo unknown)\"
KLDFLAGS  := -shared -Bsymbolic -nostdlib -znocombreloc -z nopack-relative-relocs \
	--no-undefined --build-id=sha1 -T linker.ld
HCFLAGS   := -std=gnu11 -O1 -g $(WARN) -Iinclude -DTOPAZ_HOSTED -fno-omit-frame-pointer \
	-fsanitize=address,undefined -fno-sanitize-recover=undefined
HLDLIBS   := -fsanitize=address,undefined -lcmocka -lelf -ldl -lipt -lcapstone

KOBJS := $(patsubst %,$(BUILD)/k/%.o,$(PORTABLE_SRCS) $(KERNEL_SRCS))
HOBJS := $(patsubst %,$(BUILD)/h/%.o,$(PORTABLE_SRCS) $(HOST_SUPPORT_SRCS))

.PHONY: efi-samples all kernel host-tests setup run test check test-host test-qemu bench clean image tools \
	debug help
all: kernel host-tests

kernel: $(BUILD)/topaz.efi

# ---------------------------------------------------------------- kernel
$(BUILD)/k/%.c.o: %.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(KCFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/k/%.S.o: %.S
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(KCFLAGS) -D__ASSEMBLY__ -MMD -MP -c $< -o $@

# Two-pass link, as kallsyms: pass 1 with an empty symbol table, then the
# table generated from pass 1. The table is the last section, so no address
# moves; scripts/gen-ksyms.sh --check proves it.
KLINK = $(LD) $(KLDFLAGS) $(EFI_LIB)/crt0-efi-x86_64.o $(KOBJS) $(1) \
	-L$(EFI_LIB) -lgnuefi -o $(2)

$(BUILD)/ksyms-empty.S: scripts/gen-ksyms.sh
	@mkdir -p $(BUILD)
	$(Q)scripts/gen-ksyms.sh --empty > $@
$(BUILD)/ksyms-%.o: $(BUILD)/ksyms-%.S
	$(Q)$(CC) $(KCFLAGS) -c $< -o $@
$(BUILD)/topaz.pass1.so: $(KOBJS) $(BUILD)/ksyms-empty.o linker.ld
	$(Q)$(call KLINK,$(BUILD)/ksyms-empty.o,$@)
$(BUILD)/ksyms-real.S: $(BUILD)/topaz.pass1.so scripts/gen-ksyms.sh
	$(Q)scripts/gen-ksyms.sh $< > $@
$(BUILD)/topaz.so: $(KOBJS) $(BUILD)/ksyms-real.o linker.ld
	$(Q)$(call KLINK,$(BUILD)/ksyms-real.o,$@)
	$(Q)scripts/gen-ksyms.sh --check $(BUILD)/topaz.pass1.so $@
	@# a section's relocations outside .rela are never applied (linker.ld)
	$(Q)if readelf -SW $@ | grep -qE '\] \.rela[^ ]'; then \
		echo "$@: relocations outside .rela, which EFI relocation would skip (add them to linker.ld's .rela):" >&2; \
		readelf -SW $@ | grep -E '\] \.rela[^ ]' >&2; rm -f $@; exit 1; fi
$(BUILD)/topaz.efi: $(BUILD)/topaz.so
	$(Q)$(OBJCOPY) -j .text -j .rodata -j .data -j .dynamic -j .dynsym -j .rel \
		-j .rela -j .rel.* -j .rela.* -j .reloc -j .ksyms \
		--target efi-app-x86_64 --subsystem=10 $< $@
	@echo "  built $@"

# The sample EFI application the firmware phase's tests run as a user's own
# image (fw.image=): GNU-EFI's own link script; hello.so keeps its symbols.
$(BUILD)/efi/hello.so: tests/efi/hello.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(filter-out -DTOPAZ_KERNEL -Iinclude,$(KCFLAGS)) -c $< -o $(BUILD)/efi/hello.o
	$(Q)$(LD) -shared -Bsymbolic -nostdlib -znocombreloc -T $(EFI_LIB)/elf_x86_64_efi.lds \
		$(EFI_LIB)/crt0-efi-x86_64.o $(BUILD)/efi/hello.o -L$(EFI_LIB) -lgnuefi -o $@
$(BUILD)/efi/hello2.so: tests/efi/hello.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(filter-out -DTOPAZ_KERNEL -Iinclude,$(KCFLAGS)) -DHELLO_SHIFT -c $< -o $(BUILD)/efi/hello2.o
	$(Q)$(LD) -shared -Bsymbolic -nostdlib -znocombreloc -T $(EFI_LIB)/elf_x86_64_efi.lds \
		$(EFI_LIB)/crt0-efi-x86_64.o $(BUILD)/efi/hello2.o -L$(EFI_LIB) -lgnuefi -o $@
# The sample fuzz harnesses (fw.fuzz=image): fuzz_magic (a bug behind a magic)
# and fuzz_guard (memory bugs for fw.fuzz.guard=). They include
# topaz/fuzz_harness.h, which needs only <efi.h>.
FUZZ_HARNESSES := $(BUILD)/efi/fuzz_magic.so $(BUILD)/efi/fuzz_guard.so
$(FUZZ_HARNESSES): $(BUILD)/efi/%.so: tests/efi/%.c include/topaz/fuzz_harness.h
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(filter-out -DTOPAZ_KERNEL -Iinclude,$(KCFLAGS)) -Iinclude -c $< -o $(BUILD)/efi/$*.o
	$(Q)$(LD) -shared -Bsymbolic -nostdlib -znocombreloc -T $(EFI_LIB)/elf_x86_64_efi.lds \
		$(EFI_LIB)/crt0-efi-x86_64.o $(BUILD)/efi/$*.o -L$(EFI_LIB) -lgnuefi -o $@
$(BUILD)/efi/%.efi: $(BUILD)/efi/%.so
	$(Q)$(OBJCOPY) -j .text -j .sdata -j .data -j .dynamic -j .dynsym -j .rel \
		-j .rela -j .rel.* -j .rela.* -j .reloc --target efi-app-x86_64 --subsystem=10 $< $@
# ... and the same image marked for another machine (i386): fw.image= must refuse it
$(BUILD)/efi/hello-ia32.efi: $(BUILD)/efi/hello.efi
	$(Q)python3 -c 'import sys,struct; d=bytearray(open(sys.argv[1],"rb").read()); \
		pe=struct.unpack_from("<I",d,0x3c)[0]; d[pe+4:pe+6]=b"\x4c\x01"; open(sys.argv[2],"wb").write(d)' $< $@
efi-samples: $(BUILD)/efi/hello.efi $(BUILD)/efi/hello2.efi $(BUILD)/efi/hello-ia32.efi \
	$(BUILD)/efi/fuzz_magic.efi $(BUILD)/efi/fuzz_guard.efi
kernel: efi-samples

# The user's own EFI images, copied to \EFI\tools on the boot volume with the
# samples (make run EFI=a.efi,b.efi, make image EFI=...), and folders of ELF
# files with symbols (SYMBOLS=dir,dir): scripts/esp-files.sh.
EFI        ?=
SYMBOLS    ?=

# A FAT image with the ESP layout, ready for QEMU or a USB stick: what make run's
# volume has (the sample images and EFI=, with their symbol files).
# ESP_IMG: where (the tests write theirs elsewhere).
ESP_IMG    ?= $(BUILD)/esp.img
image: $(BUILD)/topaz.efi efi-samples
	$(Q)scripts/esp-files.sh $(BUILD) $(ESP_IMG).files "$(EFI)" "$(SYMBOLS)" >$(ESP_IMG).list
	$(Q)xargs -d '\n' -a $(ESP_IMG).list scripts/mkesp.sh $(BUILD)/topaz.efi "$$CMDLINE" \
		$(ESP_IMG) boot
	$(Q)scripts/mkesp.sh --describe $(ESP_IMG)

# ---------------------------------------------------------------- hosted
$(BUILD)/h/%.c.o: %.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(HCFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/host/libtopaz.a: $(HOBJS)
	@mkdir -p $(dir $@)
	$(Q)rm -f $@ && ar rcs $@ $^
$(BUILD)/host/test_%: tests/host/test_%.c $(BUILD)/host/libtopaz.a
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(HCFLAGS) $< -Wl,--whole-archive $(BUILD)/host/libtopaz.a \
		-Wl,--no-whole-archive $(HLDLIBS) -o $@

# The translator's test runs its own functions translated: its stubs push
# below the stack pointer, as the kernel's (no red zone) allows.
$(BUILD)/host/test_xlat: HCFLAGS += -mno-red-zone
# ... and not PIE: in the low 2 GiB, its CALL stubs push with 32-bit
# absolute addresses, as the kernel's do (plain_fast()).
$(BUILD)/host/test_xlat: HLDLIBS += -no-pie

host-tests: $(HOST_TESTS)

# ---------------------------------------------------------------- host tools
# tools/ptdecode: a library (HOST_TOOL_SRCS, which the test_trace_* host
# tests link under ASan+UBSan) and a thin main; the tool itself is -O2
# without sanitizers, for speed on long traces.
HOST_TOOL_SRCS := $(filter-out tools/ptdecode/main.c,$(wildcard tools/ptdecode/*.c))
HOST_TOOL_HOBJS := $(patsubst %,$(BUILD)/h/%.o,$(HOST_TOOL_SRCS))
TCFLAGS   := -std=gnu11 -O2 -g $(WARN) -Iinclude -DTOPAZ_HOSTED
TOOL_LIBS := -lipt -lelf -lcapstone -lz -ldw
# --coverage and --coverage-check run the kernel's coverage decoder
# (kernel/coverage, with the x86 decoder and the packet helpers): the -O2 tool
# builds them itself (the tests take them from libtopaz.a; main.c has their
# WARN_ON's report)
TOOL_KERNEL_SRCS := $(COVERAGE_SRCS) $(X86_SRCS) drivers/pt_model/pt_packet_enc.c
TOOL_OBJS := $(patsubst %,$(BUILD)/tools/obj/%.o,tools/ptdecode/main.c $(HOST_TOOL_SRCS) \
	$(TOOL_KERNEL_SRCS))

$(BUILD)/tools/obj/%.c.o: %.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(TCFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/tools/ptdecode: $(TOOL_OBJS)
	$(Q)$(CC) $(TCFLAGS) $^ $(TOOL_LIBS) -o $@
	@echo "  built $@"
tools: $(BUILD)/tools/ptdecode
all: tools

# The trace tests also link the decoder library (and zlib, to check the CRC).
# A static pattern rule names the library objects, so make may use them as
# prerequisites of the pattern rule below (it is chosen over test_%: shorter stem).
$(HOST_TOOL_HOBJS): $(BUILD)/h/%.c.o: %.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(HCFLAGS) -MMD -MP -c $< -o $@
LINK_DECODER_TEST = $(CC) $(HCFLAGS) -Itools/ptdecode $< $(HOST_TOOL_HOBJS) -Wl,--whole-archive \
	$(BUILD)/host/libtopaz.a -Wl,--no-whole-archive $(HLDLIBS) -lipt -lcapstone -lz -ldw -o $@
$(BUILD)/host/test_trace_%: tests/host/test_trace_%.c $(BUILD)/host/libtopaz.a $(HOST_TOOL_HOBJS)
	@mkdir -p $(dir $@)
	$(Q)$(LINK_DECODER_TEST)
# The driver's tests read the session's containers back with the decoder too.
$(BUILD)/host/test_pt_driver: tests/host/test_pt_driver.c $(BUILD)/host/libtopaz.a $(HOST_TOOL_HOBJS)
	@mkdir -p $(dir $@)
	$(Q)$(LINK_DECODER_TEST)

# ---------------------------------------------------------------- fuzzing
# libFuzzer harnesses for ptdecode's input parsers (tests/fuzz/fuzz_*.c):
# clang, the decoder library under ASan+UBSan with libFuzzer's coverage, one
# binary per harness in $(BUILD)/fuzz/. `make fuzz` fuzzes each for
# FUZZ_SECONDS over a scratch copy of its corpus (tests/fuzz/corpus/NAME;
# new inputs stay in $(BUILD)/fuzz/work/NAME/corpus); `make fuzz-smoke`
# replays the committed corpora and fuzzes each FUZZ_SMOKE_SECONDS, one
# PASS/FAIL line per harness (`make fuzz-replay`: the replay alone). Crash inputs land in $(BUILD)/fuzz/crashes/.
# `make fuzz-seeds` regenerates the seed corpora with the kernel's writer.
FUZZ_CC            ?= clang
FUZZ_SECONDS       ?= 120
FUZZ_SMOKE_SECONDS ?= 5	# make test: a smoke, not a campaign (make fuzz)
FUZZ_NAMES    := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS     := $(addprefix $(BUILD)/fuzz/,$(FUZZ_NAMES))
FZCFLAGS      := -std=gnu11 -O1 -g $(WARN) -Iinclude -Itools/ptdecode -DTOPAZ_HOSTED \
	-fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
# Every harness links the decoder library and the portable kernel sources
# (command line, probes, slab, trace unit, x86 decoder) with the hosted machine,
# whole: the command line's parameter table is every object's KPARAMs.
FUZZ_LIB_OBJS := $(patsubst %,$(BUILD)/fuzz/obj/%.o,$(HOST_TOOL_SRCS) $(PORTABLE_SRCS) \
	$(HOST_SUPPORT_SRCS))

$(FUZZ_LIB_OBJS): $(BUILD)/fuzz/obj/%.c.o: %.c
	@mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) $(FZCFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@
$(BUILD)/fuzz/libfuzztopaz.a: $(FUZZ_LIB_OBJS)
	$(Q)rm -f $@ && ar rcs $@ $^
$(FUZZ_BINS): $(BUILD)/fuzz/%: tests/fuzz/%.c $(BUILD)/fuzz/libfuzztopaz.a
	$(Q)$(FUZZ_CC) $(FZCFLAGS) -fsanitize=fuzzer -MMD -MP $< -Wl,--whole-archive \
		$(BUILD)/fuzz/libfuzztopaz.a -Wl,--no-whole-archive $(TOOL_LIBS) -lelf -ldl -o $@
$(BUILD)/fuzz/gen_seeds: tests/fuzz/gen_seeds.c $(BUILD)/host/libtopaz.a
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(HCFLAGS) $< $(BUILD)/host/libtopaz.a $(HLDLIBS) -o $@

# After the fuzzing, and in make test on the committed corpus (perf-corpus):
# Linux perf reads the perf.data exports of fuzz_perfdata's corpus
# (tests/fuzz/perf_corpus.sh).
.PHONY: fuzz-build fuzz fuzz-smoke fuzz-replay fuzz-seeds perf-corpus fuzz-fw
fuzz-build: $(FUZZ_BINS)
fuzz: fuzz-build tools
	$(Q)status=0; tests/fuzz/run.sh fuzz $(BUILD)/fuzz $(FUZZ_SECONDS) $(FUZZ_NAMES) || status=$$?; \
	tests/fuzz/perf_corpus.sh $(BUILD)/tools/ptdecode $(BUILD)/fuzz/work/fuzz_perfdata/corpus \
		perf-corpus.fuzzed || status=$$?; exit $$status
perf-corpus: tools
	$(Q)tests/fuzz/perf_corpus.sh $(BUILD)/tools/ptdecode tests/fuzz/corpus/fuzz_perfdata
fuzz-smoke: fuzz-build
	$(Q)tests/fuzz/run.sh smoke $(BUILD)/fuzz $(FUZZ_SMOKE_SECONDS) $(FUZZ_NAMES)
fuzz-replay: fuzz-build
	$(Q)tests/fuzz/run.sh replay $(BUILD)/fuzz 0 $(FUZZ_NAMES)
fuzz-seeds: $(BUILD)/fuzz/gen_seeds
	$(Q)$(BUILD)/fuzz/gen_seeds tests/fuzz/corpus

# make fuzz-fw TARGET=NAME TIME=S: a firmware fuzz campaign (fw.fuzz=) in QEMU on the
# software trace unit, resuming from $(BUILD)/fuzz/NAME's queues, its finds back in
# them (scripts/fuzz-fw.sh, docs/fuzzing.md); INSTANCE= one of several sharing them,
# DICT=FILE a dictionary, COVERAGE=1 the corpus's coverage, REPLAY=FILE one input traced.
TIME ?= 60
export FUZZ
fuzz-fw: setup
	$(Q)$(MAKE) --no-print-directory $(JFLAG) kernel tools
	$(Q)scripts/fuzz-fw.sh --build $(abspath $(BUILD)) --target "$(TARGET)" --time "$(TIME)" \
		--instance "$(INSTANCE)" --options "$$FUZZ" --efi "$(EFI)" \
		$(if $(DICT),--dict "$(DICT)") $(if $(filter 1,$(COVERAGE)),--coverage) \
		$(if $(REPLAY),--replay "$(REPLAY)")

# ---------------------------------------------------------------- commands
setup:
	$(Q)scripts/setup.sh

# The trace container arrives on debugcon (or framed in the serial log, or as
# a file on the boot volume: boot.sh --fetch) and is decoded at the end; the
# last run's outputs go first. make run's status is topaz's.
# make run, test and check build with every core (a make -jN of the caller's wins)
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
JFLAG = $(if $(findstring -j,$(MAKEFLAGS)),,-j$(JOBS))

run: setup
	$(Q)$(MAKE) --no-print-directory $(JFLAG) kernel tools
	$(Q)scripts/trace-summary.sh --clean $(BUILD); status=0; \
	tests/qemu/boot.sh --cmdline "$$CMDLINE" --smp $(SMP) --timeout $(TIMEOUT) --show \
		--debugcon $(BUILD)/trace.tpz --log $(BUILD)/serial.log --fetch $(BUILD)/volume \
		--efi "$(EFI)" --symbols "$(SYMBOLS)" --esp-files $(BUILD)/esp-files || status=$$?; \
	scripts/trace-summary.sh $(if $(filter 1,$(INSN)),--insn) $(BUILD); exit $$status

test: setup
	$(Q)$(MAKE) --no-print-directory $(JFLAG) all
	$(Q)tests/run-all.sh

# The fast tier for the edit-build-test loop: every host test, each fuzz
# corpus replayed, one QEMU case per axis (the "fast" flag in cases.sh) and
# the oracle's three step modes with its self-tests. make test is the whole.
check: setup
	$(Q)$(MAKE) --no-print-directory $(JFLAG) all
	$(Q)tests/run-all.sh --fast

test-host: host-tests
	$(Q)tests/run-all.sh --host-only

test-qemu: kernel
	$(Q)tests/run-all.sh --qemu-only

# make debug: QEMU halted for gdb (-S, its stub on GDBPORT), topaz waiting at
# EFI entry (kgdbwait); `gdb -x scripts/topaz-gdb.py` in another terminal loads
# topaz.so where the firmware put it and lets topaz go on (docs/developing.md,
# Debugging). Without a CMDLINE of its own it runs the demo untraced: traced
# code runs from the trace engine's code cache, where breakpoints are not hit.
GDBPORT  ?= 1234
DEBUGLOG ?= $(BUILD)/debug.log
DEBUG_CMDLINE = $(if $(filter file,$(origin CMDLINE)),run=demo,$$CMDLINE) kgdbwait
debug:
	$(Q)$(MAKE) --no-print-directory $(JFLAG) kernel
	@echo "debug: QEMU waits for gdb on port $(GDBPORT); in another terminal, in $(CURDIR):"
	@echo "  gdb -x scripts/topaz-gdb.py -ex 'hbreak work_sort' -ex continue"
	$(Q)tests/qemu/boot.sh --cmdline "$(DEBUG_CMDLINE)" --smp $(SMP) --show --timeout 86400 \
		--log $(DEBUGLOG) -- -S -gdb tcp:127.0.0.1:$(GDBPORT)

# make help: the targets and the variables (tests/run-all.sh checks that every
# .PHONY target is listed)
help:
	@echo 'Targets:'
	@echo '  run          build, boot topaz in QEMU with CMDLINE, decode the trace (the default job: the traced demo)'
	@echo '  test         the whole suite: host tests, fuzz smoke, QEMU cases, the oracle (about 15 min)'
	@echo '  check        the fast tier of make test (docs/developing.md)'
	@echo '  test-host    the host tests only; test-qemu: the QEMU cases and the oracle only'
	@echo '  debug        QEMU halted for gdb; then: gdb -x scripts/topaz-gdb.py (docs/developing.md)'
	@echo '  image        build/esp.img for a USB stick, with CMDLINE (docs/real-hardware.md)'
	@echo '  all          the kernel, the host tests and the tools; kernel: build/topaz.efi; tools: build/tools/ptdecode'
	@echo '  host-tests   build the host tests; efi-samples: the sample EFI images (build/efi/)'
	@echo '  bench        the benchmarks (tests/bench/)'
	@echo '  fuzz         libFuzzer on the parsers, FUZZ_SECONDS each; fuzz-build, fuzz-smoke, fuzz-replay, fuzz-seeds'
	@echo '  fuzz-fw      fuzz firmware in QEMU: TARGET=NAME TIME=S [FUZZ=options DICT=FILE INSTANCE=ID] [COVERAGE=1 | REPLAY=FILE] (docs/fuzzing.md)'
	@echo '  perf-corpus  Linux perf reads the committed perf.data corpus'
	@echo '  setup        install the missing Debian packages (scripts/setup.sh)'
	@echo '  clean        remove $(BUILD)/'
	@echo '  help         this list'
	@echo 'Variables (make VAR=value ...):'
	@echo '  CMDLINE      the kernel command line (default: $(value CMDLINE_DEFAULT)); CMDLINE=help lists its keys'
	@echo '  SMP          CPUs of the QEMU machine (default 4)'
	@echo '  EFI          make run, make image: your EFI images onto the boot volume, in \EFI\tools (EFI=a.efi,b.efi)'
	@echo '  SYMBOLS      make run, make image: folders of ELF files with the symbols of your images (SYMBOLS=dir,dir)'
	@echo '  INSN=1       make run: also the instruction listing and the packet dump (large)'
	@echo '  TIMEOUT      make run: seconds before QEMU is stopped (default 120); ESP_IMG: make image output ($(BUILD)/esp.img)'
	@echo '  BUILD        the build folder (default build)'
	@echo '  GDBPORT      make debug: the gdb stub port (default 1234); DEBUGLOG: its serial log ($(BUILD)/debug.log)'
	@echo '  V=1          show the build commands; JOBS: make -j for run, test, check (default nproc)'
	@echo '  CC, FUZZ_CC  the compilers (gcc; clang for the fuzz harnesses); FUZZ_SECONDS, FUZZ_SMOKE_SECONDS'

# ---------------------------------------------------------------- benchmarks
# The allocator churn benchmark: the portable sources again, -O2 and without
# sanitizers, one binary per allocator (jemalloc replaces malloc when linked).
BENCH_SRCS  := $(filter-out $(PT_DRIVER_SRCS) $(PT_MODEL_SRCS) $(TRACING_SRCS) $(X86_SRCS) \
	$(COVERAGE_SRCS) $(ENGINE_PORTABLE_SRCS),$(PORTABLE_SRCS)) $(HOST_SUPPORT_SRCS)
BCFLAGS     := -std=gnu11 -O2 -g $(WARN) -Iinclude -DTOPAZ_HOSTED -DTOPAZ_BENCH
BENCH_OBJS  := $(patsubst %,$(BUILD)/bench/%.o,$(BENCH_SRCS))
BENCH_NOP   := $(patsubst %,$(BUILD)/bench/noprobe/%.o,$(BENCH_SRCS))
BENCH_BINS  := $(addprefix $(BUILD)/bench/bench-,topaz topaz-noprobe glibc mimalloc jemalloc)

$(BUILD)/bench/noprobe/%.c.o: %.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(BCFLAGS) -DTOPAZ_NO_PROBES -MMD -MP -c $< -o $@
$(BUILD)/bench/%.c.o: %.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(BCFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/bench/bench-topaz: tests/bench/bench.c $(BENCH_OBJS)
	$(Q)$(CC) $(BCFLAGS) -DALLOC_TOPAZ $^ -lelf -ldl -o $@
$(BUILD)/bench/bench-topaz-noprobe: tests/bench/bench.c $(BENCH_NOP)
	$(Q)$(CC) $(BCFLAGS) -DTOPAZ_NO_PROBES -DALLOC_TOPAZ $^ -lelf -ldl -o $@
$(BUILD)/bench/bench-glibc: tests/bench/bench.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(BCFLAGS) -DALLOC_GLIBC $< -o $@
$(BUILD)/bench/bench-mimalloc: tests/bench/bench.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(BCFLAGS) -DALLOC_MIMALLOC $< -lmimalloc -o $@
$(BUILD)/bench/bench-jemalloc: tests/bench/bench.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(BCFLAGS) -DALLOC_JEMALLOC $< -ljemalloc -o $@

# The threaded churn (tests/bench/slab_smp.c): threads as CPUs, local and
# producer/consumer (remote free) patterns, one binary per allocator as above.
SLAB_SMP_BINS := $(addprefix $(BUILD)/bench/slab_smp-,topaz glibc mimalloc jemalloc)
$(BUILD)/bench/slab_smp-topaz: tests/bench/slab_smp.c $(BENCH_OBJS)
	$(Q)$(CC) $(BCFLAGS) -DALLOC_TOPAZ $^ -lelf -ldl -pthread -o $@
$(BUILD)/bench/slab_smp-glibc: tests/bench/slab_smp.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(BCFLAGS) -DALLOC_GLIBC $< -pthread -o $@
$(BUILD)/bench/slab_smp-mimalloc: tests/bench/slab_smp.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(BCFLAGS) -DALLOC_MIMALLOC $< -lmimalloc -pthread -o $@
$(BUILD)/bench/slab_smp-jemalloc: tests/bench/slab_smp.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(BCFLAGS) -DALLOC_JEMALLOC $< -ljemalloc -pthread -o $@
BENCH_BINS += $(SLAB_SMP_BINS)

# The PT driver benchmark (PMI and buffer setup costs): the same objects plus
# the driver, on plain fake MSRs (no trace unit model).
PT_BENCH_OBJS := $(patsubst %,$(BUILD)/bench/%.o,drivers/pt/pt.c drivers/pt/pt_topa.c drivers/pt/pt_aux.c)
$(BUILD)/bench/pt-bench: tests/bench/pt_bench.c $(BENCH_OBJS) $(PT_BENCH_OBJS)
	$(Q)$(CC) $(BCFLAGS) $^ -lelf -ldl -o $@
BENCH_BINS += $(BUILD)/bench/pt-bench

# The decode-speed floor (tests/bench/ipt_bare.c): libipt counting
# instructions, on ptdecode's library objects as the tool builds them (-O2).
IPT_BARE_OBJS := $(filter-out %/main.c.o %/covcheck.c.o %/coverage.c.o \
	$(patsubst %,$(BUILD)/tools/obj/%.o,$(TOOL_KERNEL_SRCS)),$(TOOL_OBJS))
$(BUILD)/bench/ipt-bare: tests/bench/ipt_bare.c $(IPT_BARE_OBJS)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(TCFLAGS) -Itools/ptdecode $^ $(TOOL_LIBS) -o $@
BENCH_BINS += $(BUILD)/bench/ipt-bare

# The coverage decoder against that floor (tests/bench/cov_bare.c): ptcov and
# what it calls (the x86 decoder, the IP reconstruction) -O2 without
# sanitizers, as the other benchmarks build the kernel's sources, on the same
# ptdecode objects as ipt-bare (the container, the segments, the image).
COV_BARE_OBJS := $(IPT_BARE_OBJS) $(BENCH_OBJS) $(patsubst %,$(BUILD)/bench/%.o,$(COVERAGE_SRCS) \
	$(X86_SRCS) drivers/pt_model/pt_packet_enc.c)
$(BUILD)/bench/cov-bare: tests/bench/cov_bare.c $(COV_BARE_OBJS)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(BCFLAGS) -Itools/ptdecode $^ $(TOOL_LIBS) -lelf -ldl -o $@
BENCH_BINS += $(BUILD)/bench/cov-bare

bench: setup $(BENCH_BINS) kernel tools efi-samples $(BUILD)/host/test_trace_input
	$(Q)status=0; tests/bench/run.sh $(BUILD)/bench || status=$$?; \
	tests/bench/trace_speed.sh $(BUILD) sort || status=$$?; \
	tests/bench/trace_speed.sh $(BUILD) slab || status=$$?; \
	for w in recursion dispatch firmware; do \
		BOOTS=1 tests/bench/trace_speed.sh $(BUILD) $$w || status=$$?; done; \
	tests/bench/fw_speed.sh $(BUILD) vars || status=$$?; \
	tests/bench/fuzz_speed.sh $(BUILD) || status=$$?; \
	BOOTS=1 ICOUNT=1 tests/bench/fuzz_speed.sh $(BUILD) || status=$$?; \
	tests/bench/decode_speed.sh $(BUILD) || status=$$?; \
	tests/bench/decode_bare.sh $(BUILD) || status=$$?; \
	tests/bench/decode_scale.sh $(BUILD) || status=$$?; exit $$status

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
