FROM debian:bookworm-slim
ENV A=1
env B=2
Run true
run true
copy a b
from debian AS two
