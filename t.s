add $1,%eax
add $1,%ebx
add $1,%ecx
add $1,%edx
add $1,%esi
add $1,%edi
