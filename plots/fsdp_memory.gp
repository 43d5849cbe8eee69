# plots/fsdp_memory.gp - memory per rank of FSDP's sharding strategies
# (stacked: parameters, gradients, optimizer state, unsharded units alive
# at once) with the step time on the right axis, from the TSV `herd fsdp
# strategies` writes (header line first: strategy, params_mib, grads_mib,
# optimizer_mib, unsharded_mib, total_mib, step_ms, exposed_ms, fits).
# usage: gnuplot -c fsdp_memory.gp STRATEGIES.tsv OUT_PREFIX TITLE [LIMIT_MIB]
# writes OUT_PREFIX.png and OUT_PREFIX.svg; LIMIT_MIB > 0 draws the
# device's memory as a line.
if (ARGC < 3) { print "usage: gnuplot -c fsdp_memory.gp STRATEGIES.tsv OUT_PREFIX TITLE [LIMIT_MIB]"; exit status 2 }
data = ARG1
out = ARG2
lim = (ARGC >= 4) ? real(ARG4) : 0

set datafile separator "\t"
set title sprintf("%s: memory per rank and step time by strategy", ARG3) noenhanced
set ylabel "memory per rank (MiB, activations not included)"
set y2label "step time (ms)"
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.6
set grid ytics
set key below horizontal noenhanced
set yrange [0:*]
set y2range [0:*]
set ytics nomirror
set y2tics
if (lim > 0) { set arrow 1 from graph 0, first lim to graph 1, first lim nohead dt 2 lw 2 lc rgb "red" front; set label 1 sprintf("device memory %g MiB", lim) at graph 0.01, first lim offset 0,0.7 textcolor rgb "red" front }

do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1000,650 noenhanced font ",11"; set output out.".png" }
    if (fmt eq "svg") { set terminal svg size 1000,650 noenhanced font ",11"; set output out.".svg" }
    plot data skip 1 using 2:xtic(1) title "parameters" lc rgb "#1f77b4", \
         '' skip 1 using 3 title "gradients" lc rgb "#ff7f0e", \
         '' skip 1 using 4 title "optimizer state" lc rgb "#2ca02c", \
         '' skip 1 using 5 title "unsharded units" lc rgb "#9467bd", \
         '' skip 1 using 0:7 axes x1y2 with linespoints pt 7 ps 1.5 lw 2 lc rgb "black" title "step time"
    set output
}
