// Package jobsecret is a job's secret, which the job channel's ends prove to each other:
// $BENCHCTL_JOB_SECRET, else the private file benchctl submit wrote
// ($BENCHCTL_JOB_SECRET_FILE), else one rank 0 creates in the job folder and the other
// ranks read there, each file checked to be the user's own and readable by nobody else.
package jobsecret
