# The research pack: a requester from an authorized research domain, asking for research,
# is argued `research_authorized` (docs/policy-packs.md). The policy's attack rules say what
# that defeats (the PII pack's PHI deny) and what it conflicts with (the financial pack).
package claimwatch.packs.research

authorized_domains := {"irb.example.edu", "lab.example.edu"}

requester_domain := lower(parts[1]) if {
	parts := split(input.arguments.requester, "@")
	count(parts) == 2
}

default decision := {
	"decision": "allow",
	"kind": "baseline_allow",
	"claim": "no rule of the research pack applies",
	"strength": 0.3,
}

decision := {
	"decision": "allow",
	"kind": "research_authorized",
	"claim": sprintf("%s is an authorized research requester, purpose research", [requester_domain]),
	"strength": 0.7,
} if {
	input.arguments.purpose == "research"
	requester_domain in authorized_domains
}
