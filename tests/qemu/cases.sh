# QEMU smoke cases: one per line, fields separated by '|' (so no field holds one):
#   name | command line | expected exit (33 pass, 35 fail) | patterns that must appear
#   (';'-separated; "!text": text that must not) | flags (','-separated)
# Flags that shape the boot: "shell" to boot through the UEFI shell (load options),
#   "nodebugcon" for a machine without port 0xe9, "mem=SIZE" for the machine's memory,
#   "smp=N" for its CPUs, "espfile" for a machine without port 0xe9 whose trace is the file
#   on the boot volume (pt.sink=file; boot.sh --fetch takes it from there, as make run does),
#   "cmdline=printf" for a cmdline.txt of the line's printf escapes as bytes (\0 a NUL),
#   "cmdline=utf16" for one in UTF-16LE with a byte-order mark (scripts/mkesp.sh),
#   "user-efi=NAME" for the sample image as a user's NAME.efi (NAME.so beside it) added as
#   make run EFI= adds it, with make run's summary (scripts/trace-summary.sh) after the log.
# "fast": the case is in the fast tier (make check: one case per axis).
# "makerun": the boot is make run's (tests/run-all.sh, check_makerun): an earlier run's outputs
#   planted first must be gone after it; scripts/trace-summary.sh decodes what it left as make
#   run does, without the listings, then with --insn (INSN=1) writes insn.txt; without a trace
#   it says only that.
# The checks a traced case gets, each declared here (tests/run-all.sh, check_trace):
#   trace          the boot's container is kept and checked: it decodes with no error,
#                  every byte produced was delivered or reported lost, at least 2 PMIs,
#                  no INT3 missed, and the coverage decoder finds libipt's blocks
#                  and edges (ptdecode --coverage-check: qemu.coverage.NAME). A boot
#                  that traces without "trace" fails, unless it says "trace=none"
#                  (its trace is not meant to decode)
#   crosscheck     (and every "fast" trace case; all of them with run-all.sh --full) Linux
#                  perf decodes the same instructions (perf_check.py) and the call tree
#                  matches the instruction list (calltree_check.py): for a trace shape
#                  no fast case has
#   ends-at-fault  the decoded trace ends where the panic's fault was
#   ends-at-crash  it ends at the site of the fuzz crash ("result: fuzz crash ... site=")
#   ends-in-pmi    it ends at the instruction a panicking PMI interrupted
#   snapshot       the flight recorder's last bytes only: decode errors, no totals
#   stop-loss      the ToPA filled and STOP held: the loss recorded and reported
#   depth=N        the decoded call stack goes at least N deep
#   storm=N        a million instructions, 40 PMIs, N interrupts in traced code
#   fw             the firmware phase: the decoder counts what the engine ran, DxeCore
#                  decoded (fw-aborted: the count is not compared, the run was cut)
#   module=NAME    module NAME decoded; symbols=SYM: SYM named with ptdecode --symbols
#   ptwrite        PTWRITE packets in the decoded flow
#   each-cpu       every online CPU's stream decodes to what its engine ran
#   coverage       ptdecode --coverage: its drcov files read as Lighthouse and Cartographer
#                  read them, the kernel's lcov through genhtml without a warning
#                  (coverage=MODULE: MODULE's, with --symbols build/efi); with both
#                  trace-skylake and trace-fw-image, --coverage-diff of the two
# An unknown flag fails the case.
# A case whose log has "ktest: plan N" must also show N result lines; each
# in-kernel test result counts on its own in the summary.
selftest|loglevel=7 test=all|33|topaz: build id;cpu: ;Intel PT (CPUID.7.0:EBX[25]);memory map: conventional;page_alloc: free blocks per order;apic: local APIC id;topaz: ready|fast
crash-pf|crash=pf|35|PANIC: exception #PF (page fault, vector 14);CR2 (faulting address): 0x0000000000000028;[0] ;crash_page_fault+0x;end Kernel panic;power off (failure)
crash-gp|crash=gp|35|PANIC: exception #GP (general protection, vector 13);crash_general_protection+0x;RAX: 
crash-ud|crash=ud|35|PANIC: exception #UD (invalid opcode, vector 6);crash_invalid_opcode+0x
crash-stack|crash=stack|35|PANIC: exception #DF (double fault, vector 8);crash_stack_overflow+0x;stack overflow
# The command line end to end (the parser itself: tests/host/test_cmdline.c): a line of a
# kilobyte and a half from cmdline.txt, quoted words, bad keys and values named, an
# unterminated quote; test=mm after them all still runs, and the boot fails for the words
# not applied (unknown keys alone are warnings: load-options passes)
bad-cmdline|bogus=1 loglevel=99 crash=nope apic.mode=weird timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 timer.hz=100 "timer.hz=100" test=mm t="open|35|unknown key 'bogus';bad value '99' for 'loglevel': expected a number from 0 to 8;bad value 'nope' for 'crash';bad value 'weird' for 'apic.mode': expected auto, xapic or x2apic;unterminated quote;ktest: 4 passed, 0 failed;4 words of the command line not applied: loglevel (bad value), crash (bad value), apic.mode (bad value), t (unterminated quote): the boot fails|fast
# (pt=on: a container with no trace in it, which make run calls no trace)
no-such-test|pt=on test=nosuch|35|test=nosuch selects no test; suites are:|trace=none,makerun
load-options|test=traps loglevel=7 bogus.key|33|command line (from load options): "test=traps loglevel=7 bogus.key";unknown key 'bogus.key';ktest: 6 passed, 0 failed|shell
# cmdline.txt that is not plain text: a NUL cuts the line there, the words after it named and
# the boot failing (not the default job's success); UTF-16LE with its mark is read (and a
# directory given to fw.image= is called one)
cmdline-nul|test=mm\0run=sort pt=on|35|a NUL byte at offset 7 (not a text file?): the line ends there; 2 words after it not read: run (after a NUL), pt (after a NUL);ktest: 4 passed, 0 failed;2 words of the command line not applied: run (after a NUL), pt (after a NUL): the boot fails;!run: sort|cmdline=printf
cmdline-utf16|fw.image=\EFI\tools|35|fw.image=\EFI\tools: a directory on the boot volume, not a file;result: fw.phase failed=1;!no MZ header|cmdline=utf16
ptmodel-broadwell|test=ptmodel pt.profile=broadwell pt.caps|33|profile broadwell;cpu: leaf 0x14.0: eax=0000000000 ebx=0x00000001 ecx=0x00000001;pt caps: CPUID.(EAX=14H,ECX=0): eax=0x00000000 ebx=0x00000001 ecx=0x00000001 edx=0x00000000;pt caps: cr3_filtering          1 ;pt caps: psb_cyc                0 ;pt caps: topa_output            1 ;pt caps: topa_multiple_entries  0 ;pt caps: mtc_periods            0        1:EAX[31:16];(encodings none);!SDM reserves
ptmodel-tigerlake|test=ptmodel pt.profile=tigerlake|33|profile tigerlake;cpu: Intel PT (CPUID.7.0:EBX[25]): yes
ptmodel-arrowlake|test=ptmodel pt.profile=arrowlake pt.profile=nehalem pt.caps|35|profile arrowlake;pt caps: CPUID.(EAX=14H,ECX=1): eax=0x02490002 ebx=0x003f003f;pt caps: ptwrite                1 ;pt caps: power_event_trace      0 ;pt caps: psb_pmi_preserve       1 ;pt caps: event_trace            0 ;pt caps: num_address_ranges     2 ;pt caps: mtc_periods            249      1:EAX[31:16] MTC period encodings (pt.mtc_period) (encodings 0 3 6 9);pt caps: cycle_thresholds       3f ;pt caps: tnt_disable            1        0:EBX[8] ;pt caps: psb_periods            3f       1:EBX[31:16] PSB period encodings (pt.psb_period) (encodings 0 1 2 3 4 5);bad value 'nehalem' for 'pt.profile';not applied: pt.profile (bad value): the boot fails
probes|test=slab probe=vm.kmem_cache_alloc:print,vm.kmalloc:count|33|vm.kmem_cache_alloc: name=kmem_cache_alloc call_site=0x;caller_function=ktest_slab_probe_values+0x;gfp_flag_name=GFP_KERNEL;__GFP_ZERO ptr=0x;cache_name=kt-probe cpu=0;count vm.kmalloc:
trace-skylake|pt=on pt.step=single pt.buf=8K pt.region=4K pt.coverage=on run=demo|33|tracing with the software trace unit;single-step: ;result: coverage cpu=0 |fast,trace,depth=100,coverage
trace-broadwell|pt=on pt.profile=broadwell pt.noretcomp pt.buf=8K pt.region=4K pt.pmi=nmi pt.step=branch run=demo|33|profile broadwell;tracing with the software trace unit;branch-step self-check: ;branch-step: |fast,trace,depth=100
trace-tigerlake|pt=on pt.profile=tigerlake pt.buf=8K pt.region=4K pt.step=branch pt.noretcomp run=demo|33|profile tigerlake;branch-step|trace,depth=100
trace-arrowlake|pt=on pt.profile=arrowlake pt.buf=8K pt.region=4K pt.pmi=nmi pt.step=branch run=demo|33|profile arrowlake|trace,depth=100
pt-bad-options|pt=on pt.profile=broadwell pt.mtc=1 pt.ptw=1 pt.psb_period=3 pt.filter="filter no_such_symbol, filter hello!fib" pt.buf=5K run=sort|35|bad value '5K' for 'pt.buf': expected a power of two;pt.filter: 'filter no_such_symbol': unknown symbol;'filter hello!fib': module 'hello': modules are the firmware phase's loaded images;pt.filter (refused): the boot fails;pt.mtc: this CPU has no MTC packets;pt.ptw: this CPU has no PTWRITE;pt.psb_period: this CPU has no configurable PSB frequency;pt=on: tracing is off;run: sort returned;pt=on, but no trace was taken
trace-snapshot-fault|pt=on pt.step=single pt.snapshot=1 pt.buf=16K run=sort,fault|35|PANIC: exception #PF (page fault, vector 14);fault_walk+0x;pt: panic: writing the trace (the flight recorder's last bytes)|fast,trace,ends-at-fault,snapshot
trace-snapshot-fault-topa|pt=on pt.snapshot=1 pt.buf=16K pt.region=4K pt.profile=broadwell run=recursion,fault|35|PANIC: exception #PF;pt: panic: writing the trace|trace,ends-at-fault,snapshot
trace-ptwrite|pt=on pt.profile=arrowlake pt.ptw=1 pt.step=branch pt.buf=8K pt.region=4K probe=vm.kmalloc:trace run=slab|33|probe: trace attached to 1 point matching 'vm.kmalloc'|trace,ptwrite
trace-stop-loss|pt=on pt.buf=4K pt.region=4K run=slab|33|tracing with the software trace unit|trace,stop-loss,crosscheck
trace-serial|pt=on pt.sink=serial pt.noretcomp pt.buf=8K pt.region=4K run=sort,slab|33|sink serial;@TPZ-BEGIN;@TPZ-END|fast,trace
help|help|33|command line parameters:;pt.buf;core:;memory:;tracing:;firmware phase:;fault injection:;'help' without run= or test=: nothing else to do;!ktest:;!run:
trace-no-debugcon|pt=on pt.buf=8K pt.region=4K pt.noretcomp run=sort,slab|33|no debug console at port 0xe9;sink serial;@TPZ-BEGIN;@TPZ-END|trace,nodebugcon
# PMI storms: the smallest ToPA (two 4K regions), every timing packet at its highest rate, no
# RET compression, the timer at 5 kHz interrupting traced code, over a million instructions
trace-storm-vector|pt=on pt.profile=arrowlake pt.buf=8K pt.region=4K pt.tsc=1 pt.mtc=1 pt.cyc=1 pt.mtc_period=0 pt.cyc_thresh=0 pt.psb_period=0 pt.noretcomp pt.pmi=vector pt.step=branch timer.hz=5000 run=slab,slab,slab,slab,slab,slab,slab,sort,recursion,dispatch,timer,firmware|33|profile arrowlake;run: firmware returned|trace,storm=1000,crosscheck
trace-storm-nmi|pt=on pt.profile=tigerlake pt.buf=8K pt.region=4K pt.tsc=1 pt.mtc=1 pt.cyc=1 pt.mtc_period=0 pt.cyc_thresh=0 pt.psb_period=0 pt.noretcomp pt.pmi=nmi pt.step=single timer.hz=5000 run=slab,slab,slab,slab,slab,slab,slab,sort,recursion,dispatch,timer,firmware|33|profile tigerlake;run: firmware returned|trace,storm=1000
# Faults while tracing: a panic inside a PMI handler with the trace unit stopped mid-service
# (the default step mode's, translate's, page fault and vector PMI: trace-translate-*)
trace-panic-pmi-nmi|pt=on pt.buf=8K pt.region=4K pt.noretcomp pt.pmi=nmi pt.fail_pmi=5 run=slab,sort|35|Kernel panic: pt.fail_pmi=5: a panic inside that PMI's handler;pt: panic: writing the trace|fast,trace,ends-in-pmi
# Memory pressure: a buffer larger than free memory is refused with the numbers; 128 MiB traces
pt-buf-too-big|pt=on pt.buf=1G run=sort|35|pt.buf=1048576K is more than the free memory for 1 CPU (;pt=on, but no trace was taken
trace-mem-128m|pt=on pt.buf=8K pt.region=4K pt.noretcomp run=demo|33|memory map: conventional;run: firmware returned|trace,mem=128M
# A filter whose traced code is called back from untraced code (work_slab calls kmem_cache_create,
# which calls page_to_pfn): the call tree keeps work_slab below page_to_pfn (calltree_check)
trace-filter-callback|pt=on pt.filter="filter work_slab, filter page_to_pfn" pt.buf=8K pt.region=4K pt.noretcomp run=slab|33|tracing with the software trace unit|trace,crosscheck
# The CPUs the firmware's MADT lists (the start of SMP: found and named, not yet started)
smp-1|test=smp|33|smp: 1 of 1 CPUs online (APIC IDs 0);ktest: 10 passed, 0 failed|smp=1
smp-2|test=smp run=psort,slab_xcpu,ipi|33|smp: 2 of 2 CPUs online (APIC IDs 0, 1);psort: 4096 keys in 2 parts on 2 CPUs;sorted, a permutation of the input;slab_xcpu: 2 CPUs, 8 rounds: 8192 objects allocated, 8192 freed on the next CPU, 0 bad stamps, 0 failures;ipi: 2 CPUs each sent 64 calls;(want 64 each): ok;ktest: 10 passed, 0 failed;!FAILED|smp=2
smp-4|test=smp,traps run=psort,slab_xcpu,ipi|33|smp: 4 of 4 CPUs online (APIC IDs 0, 1, 2, 3);psort: 4096 keys in 4 parts on 4 CPUs;sorted, a permutation of the input;slab_xcpu: 4 CPUs, 8 rounds: 16384 objects allocated, 16384 freed on the next CPU, 0 bad stamps, 0 failures;(want 192 each): ok;passed, 0 failed;!FAILED|smp=4
smp-cpus-2-of-4|cpus=2 test=smp|33|smp: 2 of 4 CPUs online (APIC IDs 0, 1);ktest: 10 passed, 0 failed|smp=4
smp-cpu-silent|smp.silent=2 run=psort,slab_xcpu|33|CPU 2 (APIC ID 2) did not answer INIT-SIPI-SIPI within 1 s: left out, the others go on;smp: 3 of 4 CPUs online (APIC IDs 0, 1, 3);psort: 4096 keys in 3 parts on 3 CPUs;sorted, a permutation of the input;0 bad stamps, 0 failures|smp=4
smp-cpus-too-many|cpus=8 test=smp.every_cpu_online|35|cpus=8: this machine has 2 CPUs (the MADT's): using all 2;smp: 2 of 2 CPUs online;cpus= asked for more CPUs than there are: the boot fails|smp=2
smp-cpus-bad|cpus=two test=smp.every_cpu_online|35|bad value 'two' for 'cpus': 'two' is not a CPU count: give 1..64 or 'all';smp: 2 of 2 CPUs online|smp=2
smp-crash-ap|crash=ap-gp|35|CPU 3 crashes while the other 3 spin;PANIC: exception #GP (general protection, vector 13);crash_general_protection+0x;CPU 0 (APIC ID 0) stopped by the panic on CPU 3;CPU 1 (APIC ID 1) stopped by the panic on CPU 3;CPU 2 (APIC ID 2) stopped by the panic on CPU 3;crash_spin_here+0x;end Kernel panic;!did not answer the stop NMI|smp=4
smp-stack-ap|crash=ap-stack|35|PANIC: exception #DF (double fault, vector 8);stack overflow: CR2 is in the guard page below CPU 1's kernel stack;CPU 0 (APIC ID 0) stopped by the panic on CPU 1;end Kernel panic|smp=2
trace-smp-2|pt=on pt.step=branch pt.buf=32K pt.region=4K run=psort,slab_xcpu,ipi|33|smp: 2 of 2 CPUs online;trace: CPU 1: ;result: trace.cpu cpu=1 ;sorted, a permutation of the input;0 bad stamps, 0 failures;(want 64 each): ok|trace,each-cpu,smp=2
trace-smp-fault|pt=on pt.buf=8K pt.region=4K run=xfault|35|smp: 2 of 2 CPUs online;PANIC: exception #PF (page fault, vector 14);xfault_walk+0x;CPU 0 (APIC ID 0) stopped by the panic on CPU 1;pt: panic: writing the trace|trace,ends-at-fault,each-cpu,smp=2
trace-smp-4|pt=on pt.profile=broadwell pt.pmi=nmi pt.noretcomp pt.buf=16K pt.region=4K run=slab_xcpu|33|smp: 4 of 4 CPUs online;trace: CPU 3: ;result: trace.cpu cpu=3 ;0 bad stamps, 0 failures|trace,each-cpu,smp=4
trace-translate-demo|pt=on pt.step=translate pt.buf=8K pt.region=4K run=demo|33|tracing with the software trace unit;trace: translate: a ;(translate-step: ;0 exits to branch-step|fast,trace,depth=100
trace-translate-nmi|pt=on pt.step=translate pt.profile=broadwell pt.noretcomp pt.buf=8K pt.region=4K pt.pmi=nmi run=demo|33|profile broadwell;(translate-step: ;0 exits to branch-step|trace,depth=100
trace-translate-filter|pt=on pt.step=translate pt.filter="filter insertion_sort.constprop.0, filter work_dispatch" pt.buf=8K pt.region=4K run=sort,dispatch,sort,dispatch,sort,dispatch,sort,dispatch,sort,dispatch|33|tracing with the software trace unit;(translate-step: |trace
trace-translate-ptwrite|pt=on pt.step=translate pt.profile=arrowlake pt.ptw=1 pt.buf=8K pt.region=4K probe=vm.kmalloc:trace run=slab|33|probe: trace attached to 1 point matching 'vm.kmalloc';(translate-step: |trace,ptwrite
trace-translate-storm-vector|pt=on pt.step=translate pt.profile=arrowlake pt.buf=8K pt.region=4K pt.tsc=1 pt.mtc=1 pt.cyc=1 pt.mtc_period=0 pt.cyc_thresh=0 pt.psb_period=0 pt.noretcomp pt.pmi=vector timer.hz=50000 run=slab,slab,slab,slab,slab,slab,slab,sort,recursion,dispatch,timer,firmware,slab,slab,slab,slab,slab,slab,slab,sort,recursion,dispatch,timer|33|profile arrowlake;run: firmware returned;(translate-step: |trace,storm=300
trace-translate-storm-nmi|pt=on pt.step=translate pt.profile=tigerlake pt.buf=8K pt.region=4K pt.tsc=1 pt.mtc=1 pt.cyc=1 pt.mtc_period=0 pt.cyc_thresh=0 pt.psb_period=0 pt.noretcomp pt.pmi=nmi timer.hz=50000 run=slab,slab,slab,slab,slab,slab,slab,sort,recursion,dispatch,timer,firmware,slab,slab,slab,slab,slab,slab,slab,sort,recursion,dispatch,timer|33|profile tigerlake;run: firmware returned;(translate-step: |trace,storm=300
trace-translate-fault-normal|pt=on pt.step=translate pt.buf=8K pt.region=4K pt.noretcomp pt.pmi=nmi run=slab,fixups,fault|35|PANIC: exception #PF;pt: panic: writing the trace (what was not drained yet)|trace,ends-at-fault
trace-translate-panic-pmi-vector|pt=on pt.step=translate pt.buf=8K pt.region=4K pt.noretcomp pt.pmi=vector pt.fail_pmi=5 run=slab,sort|35|Kernel panic: pt.fail_pmi=5: a panic inside that PMI's handler;pt: panic: writing the trace|trace,ends-in-pmi
trace-translate-smp-2|pt=on pt.step=translate pt.buf=32K pt.region=4K pt.coverage=on run=psort,slab_xcpu,ipi|33|result: coverage cpu=1 ;smp: 2 of 2 CPUs online;trace: CPU 1: ;result: trace.cpu cpu=1 ;sorted, a permutation of the input;0 bad stamps, 0 failures;(want 64 each): ok;(translate-step: |fast,trace,each-cpu,smp=2,coverage
# The firmware phase (boot/firmware/): firmware code traced before ExitBootServices, every
# module named. Built-in workloads with PMIs in firmware code; a user's EFI image
# (tests/efi/hello.c, \EFI\tools on the boot volume) with its symbols, on another profile
# with NMI PMIs; an image that calls ExitBootServices (the trace is written first); one that
# never returns (fw.timeout=); then what must be refused, each with its cause
trace-fw-builtin|fw.run=vars,file,handles,pool pt=on pt.buf=16K|33|fw: firmware phase: fw.run=vars,file,handles,pool;fw: run: file returned;firmware modules in the trace's sideband;result: fw.phase failed=0;!stray|trace,fw
trace-fw-translate|fw.run=vars,pool pt=on pt.step=translate pt.profile=broadwell pt.noretcomp pt.pmi=nmi pt.buf=16K|33|trace: translate: a ;fw: run: pool returned;(translate-step: ;0 exits to branch-step;translate: the code caches given back, their pages' flags as before;result: fw.phase failed=0|trace,fw
# no SetMemoryAttributes from the firmware (fault injection): no code cache, the phase branch-steps
trace-fw-no-mem-attrs|fw.run=vars fw.no_mem_attrs pt=on pt.buf=16K|33|SetMemoryAttributes: EFI status 0x8000000000000003, fw.no_mem_attrs;pt.step=translate: no code cache here (error -95): branch-step;(branch-step: ;result: fw.phase failed=0;!given back|trace,fw,crosscheck
trace-fw-image|fw.image="\EFI\tools\hello.efi 18" pt=on pt.buf=16K pt.pmi=nmi pt.profile=tigerlake pt.noretcomp pt.coverage=on|33|result: coverage cpu=0 ;fw.image=\EFI\tools\hello.efi: loaded at;options "\EFI\tools\hello.efi 18";returned EFI status 0 in;result: fw.phase failed=0|fast,trace,fw,module=hello,symbols=hello!fib,coverage=hello
# a user's own image added as make run EFI= adds it (the sample as myapp.efi, myapp.so beside it:
# \EFI\tools\myapp.sym made from it), a filter by its function (Module!symbol, resolved when the
# image is loaded), and make run's summary naming it with its symbols: only fib traced
trace-fw-user-efi|fw.image="\EFI\tools\myapp.efi 21 quiet" pt=on pt.buf=8K pt.region=4K pt.pmi=nmi pt.filter="filter myapp!fib"|33|symbols from \EFI\tools\myapp.sym;fw.image=\EFI\tools\myapp.efi: loaded at;result: fw.phase failed=0;and the symbols in ;modules (instructions): myapp ;top functions: myapp!fib 100.0%|trace,user-efi=myapp
trace-fw-image-ebs|fw.run=vars fw.image="\EFI\tools\hello.efi ebs" pt=on pt.buf=16K|33|the image called ExitBootServices from 0x;, hello!efi_main+0x;the trace ends there and is written first;result: fw.phase failed=0|trace,fw,module=hello
trace-fw-timeout|fw.run=vars fw.image="\EFI\tools\hello.efi spin" fw.timeout=500 pt=on pt.buf=16K|35|still running after 500 ms (fw.timeout=): at 0x;, hello!efi_main+0x;result: fw.phase failed=1|trace,fw-aborted,module=hello,crosscheck
# the time limit's event dispatched in a firmware call of the traced image (RestoreTPL), so
# in traced code, not in the timer's interrupt: its trace ends as a window does (an abort there
# left the code cache running untraced: a #PF on its record buffer's guard page, a panic);
# the interactive Shell's wait for a key reaches either path, one run in four the panicking
# one (tests/qemu/soak.sh loops it); its 24M instructions' checks took 4 minutes: trace=none
trace-fw-timeout-call|fw.image="\EFI\tools\hello.efi tpl" fw.timeout=200 pt=on pt.buf=16K|35|still running after 200 ms (fw.timeout=): at a firmware call;result: fw.phase failed=1;!PANIC|trace,fw-aborted,module=hello
trace-fw-timeout-shell|fw.image="fv:Shell" pt=on fw.timeout=3000|35|UEFI Interactive Shell;still running after 3000 ms (fw.timeout=): at ;result: fw.phase failed=1;!PANIC|trace=none
fw-untraced-then-kernel|fw.run=all fw.then=kernel run=sort|33|fw: run: connect returned;result: fw.phase failed=0;run: sort returned;topaz: power off (success)
fw-fuzz-seeds|fw.run=fuzzseeds|33|result: fw.fuzzseeds decompress: 4 seeds x 16, ran 64, rejected 0, pool +0, pages +0: ok;result: fw.fuzzseeds devpath: 3 seeds x 16, ran 48, rejected 0, pool +0, pages +0: ok;result: fw.fuzzseeds peimage: 2 seeds x 16, ran 32, rejected 0, pool +0, pages +0: ok;result: fw.fuzzseeds hii: 3 seeds x 16, ran 48, rejected 0, pool +0, pages +0: ok;result: fw.fuzzseeds targets=4 failed=0;result: fw.phase failed=0;!FAILED;!PANIC|
fw-list|fw.run=list|33|firmware workloads (fw.run=NAME[,NAME...], or all):;ConnectController on every handle
run-bad-workload|run=sort,nosuch|35|run=sort,nosuch: no workload 'nosuch';run: sort returned
fw-bad-workload|fw.run=vars,nosuch pt=on pt.buf=16K|35|fw.run=vars,nosuch: no firmware workload 'nosuch';result: fw.phase failed=1|trace,fw
fw-image-missing|fw.image=\EFI\tools\nosuch.efi|35|fw.image=\EFI\tools\nosuch.efi: no such file on the boot volume;make run EFI=path/app.efi;result: fw.phase failed=1
fw-image-not-pe|fw.image=\EFI\topaz\cmdline.txt|35|fw.image=\EFI\topaz\cmdline.txt: not a PE/COFF EFI image
fw-image-ia32|fw.image=\EFI\tools\hello-ia32.efi|35|an image for i386 (machine 0x14c), not x86-64 (0x8664)
fw-image-fails|fw.image="\EFI\tools\hello.efi fail" pt=on pt.filter="filter hello!nosuch, filter listwalk!walk_list" fw.fuzz=nosuch|35|fw.fuzz=nosuch: no such target (fw.fuzz=list names them;the image returned an error (EFI status 0x8000000000000015);'filter hello!nosuch': module hello has no symbol 'nosuch';'filter listwalk!walk_list': no loaded image is called 'listwalk';pt=on: tracing is off: pt.filter cannot be applied;1 word of the command line not applied: pt.filter (refused): the boot fails
fw-no-cpu-arch|fw.run=vars pt=on fw.no_cpu_arch|35|the firmware has no EFI_CPU_ARCH_PROTOCOL (fw.no_cpu_arch)
fw-vector-taken|fw.run=vars pt=on fw.vector=0x20|35|the firmware refused vector 0x20 (the PMI) to RegisterInterruptHandler: a handler of its own has it
# A USB stick's user: no debug console, the trace written to \EFI\topaz\trace-0001.tpz on the
# boot volume through the firmware's file system (fetched from the volume and decoded as make
# run does)
trace-fw-file|fw.run=vars,file pt=on pt.buf=16K|33|no debug console at port 0xe9; the trace goes to a file on the boot volume (pt.sink=file);is in \EFI\topaz\trace-0001.tpz on the boot volume;result: fw.phase failed=0|fast,trace,fw,espfile,makerun
# The UEFI Shell from the firmware volume (fw.image=fv:NAME) running a command with its
# options; a name no volume has
fw-shell-ls|fw.image="fv:Shell -nostartup -noversion -exit ls fs0:\EFI"|33|fw.image=fv:Shell: loaded at;Directory of: fs0:\EFI\;returned EFI status 0 in;result: fw.phase failed=0
fw-image-fv-missing|fw.image=fv:NoSuchApp|35|fw.image=fv:NoSuchApp: no application called 'NoSuchApp' in the firmware's volumes
# fw.then=kernel after a traced firmware phase: the kernel boots and runs its job; the boot's one
# container is the firmware phase's
trace-fw-then-kernel|fw.run=pool fw.then=kernel pt=on pt.buf=16K run=sort|33|result: fw.phase failed=0;the firmware phase's trace was written; the kernel phase is not traced;run: sort returned;topaz: power off (success)|trace,fw
# An image that loads an image (LoadImage from traced code, as a shell starts a program): the
# new one is named and copied when it loads, and decodes though it is unloaded at its exit
trace-fw-image-load|fw.image="\EFI\tools\hello.efi load" pt=on pt.buf=16K|33|fw: module hello loaded at;fw: sideband: hello at;returned EFI status 0 in;result: fw.phase failed=0|trace,fw,module=hello,crosscheck
# an image loaded where another the code cache translated was unloaded (hello.efi, then
# hello2.efi, its code elsewhere, at the same place): the cache forgets the old blocks, or
# hello2 would run hello's and return as it does (EFI_INCOMPATIBLE_VERSION). Not a trace-
# case: the container keeps one image an address, so the new code's trace cannot decode, said
fw-image-reload|fw.image="\EFI\tools\hello.efi reload" pt=on pt.buf=16K|33|fw: run: image \EFI\tools\hello.efi reload returned EFI status 0 in;where new code was loaded: its code cache starts again;where hello#2 was: the container keeps hello#2 there;result: fw.phase failed=0|trace=none
# fw.fuzz=image (issue 30): the sample harness tests/efi/fuzz_magic.c hides a bug behind
# "TPZ" compared a byte at a time. With the trace's coverage as feedback the fixed seed
# and budget find it (at execution 18354 on the build that wrote this: edge IDs hash code
# addresses, so any change to topaz's code moves it; each byte matched is a new edge, kept); mutating
# the seed alone (feedback=off) does not in the same budget. The campaign is the same on
# every boot (calibration drops edges an interrupt made). The trace stays in memory.
fuzz-image|fw.image=\EFI\tools\fuzz_magic.efi fw.fuzz=image pt=on pt.coverage=on pt.sink=memory fw.fuzz.runs=100000 fw.fuzz.seed=1 fw.fuzz.max_len=4|35|fuzz: image: 0 seeds, 100000 runs, seed 1, max_len 4, feedback on;new edge, kept (corpus 4);the input, 4 bytes: 54 50 00 00;result: fuzz crash kind=bug;what="planted bug behind the magic TPZ";crashes=1 feedback=on seed=1;result: fw.phase failed=1;!PANIC|trace=none
fuzz-image-nofeedback|fw.image=\EFI\tools\fuzz_magic.efi fw.fuzz=image pt=on pt.coverage=on pt.sink=memory fw.fuzz.runs=100000 fw.fuzz.seed=1 fw.fuzz.max_len=4 fw.fuzz.feedback=off|33|fuzz: image: 0 seeds, 100000 runs, seed 1, max_len 4, feedback off;result: fuzz target=image execs=;corpus=1 kept=0 ;crashes=0 feedback=off seed=1;!result: fuzz crash;!kept (corpus;result: fw.phase failed=0;!PANIC|trace=none
# fw.fuzz's guards (tests/efi/fuzz_guard.c: its bugs hit on every input, so these test the
# guard, not the search). fw.fuzz.guard=pool: 199 executions round-trip AllocatePool/FreePool
# through the guarded heap (its quarantine wraps), then a write one byte past a 16-byte
# buffer is caught at the instruction, and the trace ends there; the input's guard page
# (fw.fuzz.guard=input, the default) catches a read past the input; a read after FreePool;
# without guards the three bugs run silently until a hang at execution 300 is a timeout
fuzz-guard-pool|fw.image="\EFI\tools\fuzz_guard.efi overflow after=200" fw.fuzz=image fw.fuzz.guard=pool pt=on pt.coverage=on pt.buf=8K pt.region=4K fw.fuzz.runs=1000 fw.fuzz.max_len=16|35|fuzz: guards (fw.fuzz.guard=pool): the input ends where an unmapped page starts; AllocatePool/AllocatePages guarded;fuzz: crash: kind=pool-overflow on execution 200;#PF (page fault) at 0x;, fuzz_guard!overflow+0x;write of 0x;: 0 bytes after the 16-byte allocation at 0x;(AllocatePool);result: fuzz crash kind=pool-overflow execs=200 size=;site=fuzz_guard!overflow+0x;result: fw.phase failed=1;!PANIC|trace,ends-at-crash
fuzz-guard-input|fw.image="\EFI\tools\fuzz_guard.efi overread" fw.fuzz=image fw.fuzz.feedback=off fw.fuzz.runs=10|35|fuzz: guards (fw.fuzz.guard=input): the input ends where an unmapped page starts; timeout: none;fuzz: crash: kind=overread on execution 1;read of 0x;: 0 bytes after the 1-byte input at 0x;(its guard page);fuzz: the input, 1 bytes: 00;result: fuzz crash kind=overread execs=1 size=1 site=fuzz_guard!overread+0;result: fw.phase failed=1;!PANIC
fuzz-guard-uaf|fw.image="\EFI\tools\fuzz_guard.efi uaf" fw.fuzz=image fw.fuzz.guard=pool fw.fuzz.feedback=off fw.fuzz.runs=10|35|fuzz: crash: kind=use-after-free on execution 1;read of 0x;: 0 bytes into the 32-byte allocation at 0x;(AllocatePool, freed);result: fuzz crash kind=use-after-free execs=1 size=1 site=fuzz_guard!use_after_free+0x;result: fw.phase failed=1;!PANIC
fuzz-guard-off|fw.image="\EFI\tools\fuzz_guard.efi overread overflow uaf hang=300" fw.fuzz=image fw.fuzz.guard=none fw.fuzz.timeout=200 fw.fuzz.feedback=off fw.fuzz.runs=1000|35|fuzz: guards (fw.fuzz.guard=none): none; timeout: 200 ms;fuzz: crash: kind=timeout on execution 300;still running after 200 ms (fw.fuzz.timeout=): it hung there;result: fuzz crash kind=timeout execs=300 size=;site=fuzz_guard!hang+0x;result: fw.phase failed=1;!kind=overread;!kind=pool-overflow;!kind=use-after-free;!PANIC
# The built-in targets (issue 30) in one boot, one campaign after another, fixed seed and
# budget: each reaches more edges than its seeds did, leaks no firmware pool or pages
# (compared around the campaign, after a warm-up round of its seeds), and the phase ends
# and powers off cleanly. hii is not in it: within 60 mutants its campaign finds OVMF's
# hang (fw-fuzz-hii), and a NewPackageList that fails leaks its record (docs/fuzzing.md).
fw-fuzz-builtin|fw.fuzz=decompress,devpath,peimage pt=on pt.coverage=on pt.sink=memory fw.fuzz.runs=60 fw.fuzz.seed=1|33|result: fuzz target=decompress execs=;result: fuzz check target=decompress edges=more pool=+0 pages=+0 leak=no;result: fuzz target=devpath execs=;result: fuzz check target=devpath edges=more pool=+0 pages=+0 leak=no;result: fuzz target=peimage execs=;result: fuzz check target=peimage edges=more pool=+0 pages=+0 leak=no;result: fw.phase failed=0;!PANIC;!result: fuzz crash|trace=none
# hii's campaign finds OVMF's hang (docs/fuzzing.md): a string block of a type HiiDatabaseDxe
# does not know makes FindStringBlock loop for ever at TPL_NOTIFY, holding the database's
# lock, where no timer event is dispatched. fw.fuzz.timeout= ends it at the interrupt that
# returns there past the deadline: kind timeout, the site in the loop, the trace ending at
# it, the input written to the boot volume; the leak check does not count what the cut
# execution held
fw-fuzz-hii|fw.fuzz=hii pt=on pt.coverage=on fw.fuzz.runs=200 fw.fuzz.seed=1 fw.fuzz.timeout=500|35|fuzz: guards (fw.fuzz.guard=input): the input ends where an unmapped page starts; timeout: 500 ms;fuzz: hii: 3 seeds, 200 runs, seed 1;fuzz: crash: kind=timeout on execution ;fw.fuzz: crash: timeout at 0x;, HiiDatabase+0x2d;still running after 500 ms (fw.fuzz.timeout=): it hung there;fuzz: the crash input: \EFI\topaz\fuzz\hii\crashes\crash-;result: fuzz crash kind=timeout execs=;site=HiiDatabase+0x2d;crashes=1 feedback=on seed=1;result: fuzz check target=hii ;leak=unknown;result: fw.phase failed=1;!the boot volume takes no more fuzz files;!the campaign leaked firmware memory;!PANIC|trace,ends-at-crash
