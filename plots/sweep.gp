# plots/sweep.gp - a parameter sweep (e.g. DDP's bucket_cap_mb): step
# time and exposed communication against the parameter's value.
# Input TSV columns: value, step_ms, exposed_ms (a header line first).
# usage: gnuplot -c sweep.gp SWEEP.tsv OUT_PREFIX "TITLE" "PARAMETER" [log]
# writes OUT_PREFIX.png and OUT_PREFIX.svg
if (ARGC < 2) { print "usage: gnuplot -c sweep.gp SWEEP.tsv OUT_PREFIX [TITLE] [PARAMETER] [log]"; exit status 2 }
data = ARG1
out = ARG2
ttl = (ARGC >= 3) ? ARG3 : "parameter sweep"
param = (ARGC >= 4) ? ARG4 : "parameter"

set datafile separator "\t"
set title ttl noenhanced
set xlabel param noenhanced
set ylabel "time (ms)"
if (ARGC >= 5 && ARG5 eq "log") { set logscale x 2 }
set grid
set key top right noenhanced
set yrange [0:*]

do for [fmt in "png svg"] {
    if (fmt eq "png") { set terminal pngcairo size 1000,650 noenhanced font ",11"; set output out.".png" }
    if (fmt eq "svg") { set terminal svg size 1000,650 noenhanced font ",11"; set output out.".svg" }
    plot data skip 1 using 1:2 with linespoints pt 7 lw 2 title "step time", \
         data skip 1 using 1:3 with linespoints pt 5 lw 2 title "exposed communication"
    set output
}
